#!/usr/bin/env python3
"""mlakit's DSA decode and its peers on the same workloads, timed the same way in one run.

    PYTHONPATH=build/python python3 scripts/peer_bench.py [--suites contest serving]
        [--impls mlakit triton-bn64w4 triton-bn32w4] [--iters 50] [--warmup 10] [--seed 1]
        [--out FILE.jsonl]

A claim against a peer holds only when both were measured the same way in one run: every
implementation here gets the same inputs (the 23 contest shapes and the serving batches, with
exactly the indices of the C++ suites: scripts/fib/synth.py; randn bf16 q and caches), the same
check and the same timing:

- check: output and lse against the torch reference the contest's harness runs
  (scripts/fib/dsa_reference.py), contest rule (docs/dsa-contract.md; the binding's tests' own
  assert_contest_close, python/tests/dsa_ref.py); a workload that fails is reported and not timed;
- GPU span of one call: CUPTI's kernel records through PyTorch's profiler (kineto), from the
  call's first kernel start to its last kernel end, a buffer of twice the L2 written before every
  call (cold L2) and a busy-wait kernel queued after it (30 us + 4 x the p90 of the host time of
  one call) so that the host's launch time never opens a gap inside the call, 10 warm-up calls, the
  median of 50 (the rule of `mlakit bench`; docs/workbench.md);
- host time of one call: perf_counter around each of 20 calls queued behind a busy GPU, median.

Implementations: `mlakit` (the binding, default plans) and `triton-<config>`, a plain Triton
split-K kernel written from the spec's description of its peer (scripts/peers/triton_dsa.py;
configs bn64w4, bn32w4, bn64w8: slots per block and warps; bn64w4s also skips blocks of padding
only). With several peers the table adds the best of them per workload. Peers that are not
installable here (FlashAttention-3's MLA path, FlashMLA) are not run; docs/peers.md says so.

Where torch, triton, a CUDA device or (for `mlakit`) the binding is missing it prints
`[peer_bench] skipped: <reason>.` and exits 0. Otherwise it prints a Markdown table per suite
(span per implementation, ratio to mlakit, per workload and the suite mean) and, with --out, one
JSON line per (implementation, workload).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "scripts" / "fib"))
sys.path.insert(0, str(ROOT / "python" / "tests"))  # dsa_ref: the contest rule the binding's tests apply

import synth  # noqa: E402
from peers import TRITON_CONFIGS, spans  # noqa: E402

SUITES = ("contest", "serving")
# Every implementation the script knows; all of them run by default.
DEFAULT_IMPLS = ("mlakit",) + tuple("triton-" + c for c in TRITON_CONFIGS)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suites", nargs="+", default=list(SUITES), choices=SUITES)
    ap.add_argument("--impls", nargs="+", default=list(DEFAULT_IMPLS),
                    help="mlakit and/or triton-<config> (" + ", ".join(TRITON_CONFIGS) + "); the first is "
                    "the one every other is compared with (default: all)")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1, help="the suites' index seed (as mlakit bench --seed)")
    ap.add_argument("--out", type=Path, help="JSON lines, one per (implementation, workload)")
    args = ap.parse_args(argv)
    for name in args.impls:
        if name not in DEFAULT_IMPLS:
            ap.error(f"--impls: unknown implementation {name!r} ({', '.join(DEFAULT_IMPLS)})")
    if len(set(args.impls)) != len(args.impls):
        ap.error("--impls: an implementation is named twice")
    if args.iters < 1 or args.warmup < 0:
        ap.error("--iters must be >= 1 and --warmup >= 0")
    if args.out is not None:
        folder = args.out.resolve().parent
        if args.out.is_dir() or not folder.is_dir() or not os.access(folder, os.W_OK):
            ap.error(f"--out: cannot write {str(args.out)!r} (a file in an existing, writable folder)")
    return args


def busy_cycles(host_us: float) -> int:
    """Cycles of busy-wait queued before each timed call: 30 us + 4 x the host time of one call (the
    rule of src/workbench/timer.cpp; the factor covers the profiler's per-launch cost), counted at
    2 GHz, at or above an SM clock of Hopper, so that the wait is never shorter than that."""
    return int(2000 * (30.0 + 4.0 * host_us))


def median_span(fn, flush, iters: int, warmup: int, host_us: float) -> tuple[float, list[float]]:
    import torch
    from torch.profiler import ProfilerActivity, profile

    cycles = busy_cycles(host_us)

    def timed_call():
        flush()
        torch.cuda._sleep(cycles)
        fn()

    for _ in range(warmup):
        timed_call()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            timed_call()
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "trace.json"
        prof.export_chrome_trace(str(path))
        kernels = spans.kernels_of_file(path)
        spans.check_busy_waits(kernels, iters)
        per_call = spans.call_spans(kernels, iters)
    return statistics.median(per_call), per_call


def host_times_us(fn, calls: int = 20) -> list[float]:
    import torch

    torch.cuda.synchronize()
    torch.cuda._sleep(200_000_000)  # ~0.1 s of GPU busy-wait: the calls queue, none waits for the GPU
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
    torch.cuda.synchronize()
    return times


def make_impl(name: str):
    if name == "mlakit":
        import mlakit

        return mlakit.dsa_sparse_attention
    from peers.triton_dsa import TritonSplitK

    return TritonSplitK(name[len("triton-"):])


def suite_workloads(suite: str, seed: int):
    return synth.contest_workloads(seed=seed) if suite == "contest" else synth.serving_workloads(seed=seed)


def missing_requirement(impls: list[str]) -> str | None:
    """Why the bench cannot run here, or None: it needs torch, triton (the flush and the peer are
    Triton kernels), a CUDA device and, when `mlakit` is named, the binding."""
    import importlib.util

    for module in ("torch", "triton"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed"
    import torch

    if not torch.cuda.is_available():
        return "no CUDA device visible to PyTorch"
    if "mlakit" in impls and importlib.util.find_spec("mlakit") is None:
        return "the mlakit binding is not importable (build it, then PYTHONPATH=build/python)"
    return None


def run(args) -> int:
    reason = missing_requirement(args.impls)
    if reason:
        print(f"[peer_bench] skipped: {reason}.")
        return 0
    import torch

    import dsa_reference
    from dsa_ref import assert_contest_close
    from peers.triton_dsa import L2Flush

    dev = torch.device("cuda")
    flush = L2Flush(dev)
    impls = {name: make_impl(name) for name in args.impls}
    out_file = args.out.open("w", encoding="utf-8") if args.out else None
    failures = 0
    gen = torch.Generator(device=dev)
    gen.manual_seed(args.seed)

    def randn_bf16(*shape):
        return torch.randn(shape, generator=gen, device=dev).to(torch.bfloat16)

    for suite in args.suites:
        workloads = suite_workloads(suite, args.seed)
        p0 = workloads[0].problem
        ckv = randn_bf16(p0.num_pages, p0.page_size, p0.head_dim_ckv)
        kpe = randn_bf16(p0.num_pages, p0.page_size, p0.head_dim_kpe)
        rows = []
        for w in workloads:
            p = w.problem
            assert (p.num_pages, p.page_size) == (p0.num_pages, p0.page_size), "one cache per suite"
            q_nope = randn_bf16(p.num_tokens, p.num_heads, p.head_dim_ckv)
            q_pe = randn_bf16(p.num_tokens, p.num_heads, p.head_dim_kpe)
            idx = torch.tensor(w.indices, dtype=torch.int32, device=dev)
            ref_out, ref_lse = dsa_reference.run(q_nope, q_pe, ckv, kpe, idx, w.sm_scale)
            row = {"suite": suite, "workload": w.name, "tokens": p.num_tokens,
                   "valid_slots": sum(w.valid)}
            for name, impl in impls.items():
                out = torch.full_like(ref_out, float("nan"))
                lse = torch.full_like(ref_lse, float("nan"))
                call = lambda: impl(q_nope, q_pe, ckv, kpe, idx, w.sm_scale, out=out, lse=lse)  # noqa: E731
                call()
                torch.cuda.synchronize()
                ok, detail = True, "ok"
                try:
                    assert_contest_close(torch, out, ref_out, "output")
                    assert_contest_close(torch, lse, ref_lse, "lse")
                except AssertionError as e:
                    ok, detail = False, str(e)
                rec = {"impl": name, "suite": suite, "workload": w.name, "tokens": p.num_tokens,
                       "valid_slots": row["valid_slots"], "verified": ok, "check": detail}
                if ok:
                    host = host_times_us(call)
                    span, per_call = median_span(call, flush, args.iters, args.warmup, _quantile(host, 0.9))
                    rec.update(span_us=span, span_p10_us=_quantile(per_call, 0.1),
                               span_p90_us=_quantile(per_call, 0.9), host_us=statistics.median(host))
                    row[name] = span
                else:
                    failures += 1
                    row[name] = math.nan
                    print(f"[peer_bench] {name} {w.name}: FAILED verification: {detail}", file=sys.stderr)
                if out_file:
                    out_file.write(json.dumps(rec) + "\n")
                    out_file.flush()
            rows.append(row)
        print(table(suite, rows, list(impls)))
        del ckv, kpe
        torch.cuda.empty_cache()
    if out_file:
        out_file.close()
    print(f"{failures} implementation-workload pairs failed verification")
    return 1 if failures else 0


def _quantile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def table(suite: str, rows: list[dict], impls: list[str]) -> str:
    """A Markdown table: span (us) per implementation, each against the first one, and the means;
    with two peers or more, the best peer per workload too (the peer's fairest figure)."""
    base, peers = impls[0], impls[1:]
    rows = [dict(r) for r in rows]
    if len(peers) > 1:
        for r in rows:
            spans_ = [r.get(n) for n in peers if r.get(n) is not None and r.get(n) == r.get(n)]
            r["best peer"] = min(spans_) if spans_ else math.nan
        peers = peers + ["best peer"]
    cols = [base] + peers
    head = ["workload", "T", "valid"] + [f"{n} (us)" for n in cols] + [f"{n} / {base}" for n in peers]
    lines = [f"### {suite}", "", "| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for r in rows:
        cells = [r["workload"], str(r["tokens"]), str(r["valid_slots"])]
        cells += [_fmt(r.get(n)) for n in cols]
        cells += [_fmt(_ratio(r.get(n), r.get(base))) for n in peers]
        lines.append("| " + " | ".join(cells) + " |")
    means = {n: _mean([r.get(n) for r in rows]) for n in cols}
    cells = ["mean", "", ""] + [_fmt(means[n]) for n in cols] + [_fmt(_ratio(means[n], means[base])) for n in peers]
    lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    for n in peers:
        faster = sum(1 for r in rows if _ratio(r.get(n), r.get(base)) < 1.0)
        lines.append(f"{n} faster than {base} on {faster} of {len(rows)} workloads")
    return "\n".join(lines) + "\n"


def _ratio(a, b):
    if a is None or b is None or not (a == a and b == b) or b == 0:
        return math.nan
    return a / b


def _mean(xs):
    xs = [x for x in xs if x is not None and x == x]
    return sum(xs) / len(xs) if xs else math.nan


def _fmt(x) -> str:
    return "-" if x is None or x != x else f"{x:.2f}"


def main(argv=None) -> int:
    return run(parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
