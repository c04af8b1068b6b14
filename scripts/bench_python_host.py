#!/usr/bin/env python3
"""Host cost and GPU time of mlakit's eager calls from Python, beside one-op torch calls.

Host time: perf_counter around each call, preallocated out/lse, no synchronization inside a
batch; the stream is drained between batches (untimed) so the launch queue never fills and blocks
a launch. The median over all calls is the figure.

Breakdown (first, one process, one shape per op): for mlakit.dsa_sparse_attention,
dsa_sparse_attention_fp8 and mla_decode, the public call beside a one-op torch call on the same
tensors (goal: at most that + 6 us), and the layers timed apart:
  python wrapper     public call - mlakit._C call (stream=None)
  stream lookup      _C call with stream=None (the C++ side asks PyTorch) - _C call given the
                     stream as an int; and what PyTorch's Python current_stream() costs
  nanobind + dlpack  one _C.describe_tensor(t) (one crossing, one tensor's DLPack view, a dict)
                     x the call's tensors
  plan cache         calls alternating two shapes - calls of one shape (the previous-plan fast
                     path missed, the hash lookup taken); and the first call after empty_cache()
                     (plan built, workspace allocated), one sample
  the rest           _C call (stream given) - the crossings: argument checks and the launches
Then, per --tokens, the DSA call's other ways in (outputs allocated by the call, torch.ops, the
raw extension) and its GPU time: (1) back to back, queued behind a busy-wait kernel so host time
never shows, events around the batch; (2) one call at a time with a cold L2 behind a busy-wait,
events around the call: median and p90. The C++ workbench (`mlakit bench`) is the reference for
GPU spans (CUPTI); this is the Python view.

Without PyTorch, a CUDA device or the binding it says why and exits 0.

Output: one JSON line per result on stdout, the tables on stderr.

    PYTHONPATH=build/python python3 scripts/bench_python_host.py                # breakdown + T 1 8 64
    PYTHONPATH=build/python python3 scripts/bench_python_host.py --only breakdown
    MLAKIT_NO_DLPACK_EXCHANGE=1 ...   # the same through __dlpack__ (older PyTorch's route)
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

CONTEST_SM_SCALE = 0.1352337788608801


def git_revision():
    try:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        return subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10).stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def percentile(samples, q):
    s = sorted(samples)
    k = (len(s) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def make_inputs(num_tokens, num_pages, page_size, topk, valid, device, seed):
    """randn bf16 q and caches; each row picks whole random pages (the serving/contest
    structure), `valid` leading entries, -1 after."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    q_nope = torch.randn(num_tokens, 16, 512, generator=g).to(torch.bfloat16).to(device)
    q_pe = torch.randn(num_tokens, 16, 64, generator=g).to(torch.bfloat16).to(device)
    ckv = torch.randn(num_pages, page_size, 512, dtype=torch.bfloat16, device=device)
    kpe = torch.randn(num_pages, page_size, 64, dtype=torch.bfloat16, device=device)
    pages_per_row = -(-topk // page_size)
    rows = []
    for _ in range(num_tokens):
        pages = torch.randperm(num_pages, generator=g)[:pages_per_row]
        slots = (pages[:, None] * page_size + torch.arange(page_size)[None, :]).reshape(-1)[:topk]
        row = slots.to(torch.int32)
        row[valid:] = -1
        rows.append(row)
    idx = torch.stack(rows).to(device)
    return q_nope, q_pe, ckv, kpe, idx


def host_times(fn, calls, batch, sync):
    """Per-call host seconds of `fn()`, `calls` of them in batches of `batch`."""
    samples = []
    timer = time.perf_counter
    for _ in range(5):
        fn()
    sync()
    while len(samples) < calls:
        for _ in range(batch):
            t0 = timer()
            fn()
            samples.append(timer() - t0)
        sync()
    return [s * 1e6 for s in samples]


def gpu_back_to_back(fn, calls, device):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize(device)
    torch.cuda._sleep(40_000_000)  # ~20 ms: every launch below is queued before the first runs
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    torch.cuda.synchronize(device)
    return start.elapsed_time(end) * 1e3 / calls


def gpu_cold(fn, iters, device):
    l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 64 << 20)
    flush = torch.empty(2 * l2 // 4, dtype=torch.float32, device=device)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for i in range(10 + iters):
        flush.zero_()
        torch.cuda._sleep(2_000_000)  # ~1 ms: the call's launches are queued before it starts
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize(device)
        if i >= 10:
            samples.append(start.elapsed_time(end) * 1e3)
    return samples


def missing():
    """Why nothing can be measured here, or None; imports torch and mlakit as globals."""
    global torch, mlakit
    try:
        import torch
    except ImportError:
        return "PyTorch is not installed (pip install 'mlakit[torch]')"
    if not torch.cuda.is_available():
        return "no CUDA device visible"
    try:
        import mlakit
    except ImportError as e:
        return f"the mlakit binding is not importable ({e}; PYTHONPATH=build/python?)"
    if torch.cuda.get_device_capability() != (9, 0):
        return f"mlakit's kernels need an sm_90 GPU, found {torch.cuda.get_device_name()}"
    return None


def median_us(fn, calls, batch):
    us = host_times(fn, calls, batch, torch.cuda.synchronize)
    return statistics.median(us)


def first_call_us(fn):
    """One call right after empty_cache(): the plan built and the workspace allocated."""
    torch.cuda.synchronize()
    mlakit._C.empty_cache()
    t0 = time.perf_counter()
    fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) * 1e6


def op_cases(T, device):
    """Per op: the tensors, the public call, the _C call (given a stream), a one-op torch call on
    the same tensors, and the same calls at a second shape (T + 1) for the plan-cache figure."""
    pages, ps, topk, heads = 512, 64, 2048, 16
    cases = {}

    def dsa(tokens):
        q_nope, q_pe, ckv, kpe, idx = make_inputs(tokens, pages, ps, topk, topk, device, 1)
        out = torch.empty(tokens, heads, 512, dtype=torch.bfloat16, device=device)
        lse = torch.empty(tokens, heads, dtype=torch.float32, device=device)
        return q_nope, q_pe, ckv, kpe, idx, out, lse

    def dsa_calls(t):
        q_nope, q_pe, ckv, kpe, idx, out, lse = t
        raw = mlakit._C.dsa_sparse_attention
        return (lambda: mlakit.dsa_sparse_attention(q_nope, q_pe, ckv, kpe, idx, CONTEST_SM_SCALE,
                                                    out=out, lse=lse),
                lambda s: raw(q_nope, q_pe, ckv, kpe, idx, CONTEST_SM_SCALE, out, lse, s))

    def fp8(tokens):
        q_nope, q_pe, ckv, kpe, idx, out, lse = dsa(tokens)
        return q_nope, q_pe, mlakit.quantize_dsa_fp8(ckv, kpe), idx, out, lse

    def fp8_calls(t):
        q_nope, q_pe, cache, idx, out, lse = t
        raw = mlakit._C.dsa_sparse_attention_fp8
        return (lambda: mlakit.dsa_sparse_attention_fp8(q_nope, q_pe, cache, idx, CONTEST_SM_SCALE,
                                                        out=out, lse=lse),
                lambda s: raw(q_nope, q_pe, cache, idx, CONTEST_SM_SCALE, out, lse, s))

    def mla(b):
        max_pages = 32
        q = torch.randn(b, 1, heads, 576, device=device).to(torch.bfloat16)
        kv = torch.randn(b * max_pages, ps, 576, device=device).to(torch.bfloat16)
        table = torch.arange(b * max_pages, dtype=torch.int32, device=device).view(b, max_pages)
        lens = torch.full((b,), max_pages * ps, dtype=torch.int32, device=device)
        out = torch.empty(b, 1, heads, 512, dtype=torch.bfloat16, device=device)
        lse = torch.empty(b, 1, heads, dtype=torch.float32, device=device)
        return q, kv, table, lens, out, lse

    def mla_calls(t):
        q, kv, table, lens, out, lse = t
        raw = mlakit._C.mla_decode
        return (lambda: mlakit.mla_decode(q, None, kv, None, table, lens, CONTEST_SM_SCALE, out=out,
                                          lse=lse),
                lambda s: raw(q, None, kv, None, table, lens, CONTEST_SM_SCALE, False, out, lse, s))

    for name, make, calls in (("dsa_sparse_attention", dsa, dsa_calls),
                              ("dsa_sparse_attention_fp8", fp8, fp8_calls),
                              ("mla_decode", mla, mla_calls)):
        try:
            a, b = make(T), make(T + 1)
        except Exception as e:  # noqa: BLE001  (a table row says what failed)
            cases[name] = f"{type(e).__name__}: {e}"
            continue
        tensors = [x for x in a if isinstance(x, torch.Tensor)]
        q = tensors[0]
        scratch = torch.empty_like(q)
        cases[name] = {"tensors": tensors, "calls": calls(a), "other": calls(b),
                       # the yardstick: one torch op on the call's first input
                       "torch_op": lambda q=q, scratch=scratch: torch.add(q, q, out=scratch)}
    return cases


def breakdown(T, calls, batch, common):
    """The layers of one eager call of each op (module docstring); rows for the table."""
    device = torch.device("cuda", torch.cuda.current_device())
    stream = torch.cuda.current_stream(device).cuda_stream
    a, b = torch.zeros(16, device=device), torch.zeros(16, device=device)
    small = median_us(lambda: torch.add(a, b, out=a), calls, batch)
    py_stream = median_us(lambda: torch.cuda.current_stream(device).cuda_stream, calls, batch)
    rows = []
    for name, case in op_cases(T, device).items():
        if isinstance(case, str):
            rows.append({**common, "what": "breakdown", "op": name, "T": T, "error": case})
            continue
        public, raw = case["calls"]
        other_public, _ = case["other"]
        try:
            r = {"torch_op_us": median_us(case["torch_op"], calls, batch),
                 "public_us": median_us(public, calls, batch),
                 "c_stream_none_us": median_us(lambda: raw(None), calls, batch),
                 "c_stream_given_us": median_us(lambda: raw(stream), calls, batch),
                 "describe_tensor_us": median_us(lambda: mlakit._C.describe_tensor(case["tensors"][0]),
                                                 calls, batch)}
            flip = [public, other_public]
            state = {"i": 0}

            def alternate():
                state["i"] ^= 1
                flip[state["i"]]()
            r["alternating_shapes_us"] = median_us(alternate, calls, batch)
            r["first_call_us"] = first_call_us(public)
        except Exception as e:  # noqa: BLE001
            rows.append({**common, "what": "breakdown", "op": name, "T": T,
                         "error": f"{type(e).__name__}: {e}"})
            continue
        n = len(case["tensors"])
        r.update({
            "tensors": n,
            "python_wrapper_us": r["public_us"] - r["c_stream_none_us"],
            "stream_lookup_cpp_us": r["c_stream_none_us"] - r["c_stream_given_us"],
            "stream_lookup_python_us": py_stream,
            "nanobind_dlpack_us": r["describe_tensor_us"] * n,
            "plan_cache_switch_us": r["alternating_shapes_us"] - r["public_us"],
            "rest_us": r["c_stream_given_us"] - r["describe_tensor_us"] * n,
            "excess_over_torch_op_us": r["public_us"] - r["torch_op_us"],
            "small_torch_add_us": small,
        })
        r = {k: round(v, 3) if isinstance(v, float) else v for k, v in r.items()}
        rows.append({**common, "what": "breakdown", "op": name, "T": T, **r})
    for row in rows:
        print(json.dumps(row), flush=True)
    return rows


def print_breakdown(rows, goal_us, err):
    print(f"\nhost time of one eager call (median us), T = {rows[0]['T']}; layers timed apart "
          f"(scripts/bench_python_host.py's docstring)", file=err)
    cols = [("torch one-op", "torch_op_us"), ("mlakit call", "public_us"),
            ("excess", "excess_over_torch_op_us"), ("py wrapper", "python_wrapper_us"),
            ("stream C++", "stream_lookup_cpp_us"), ("nb+dlpack", "nanobind_dlpack_us"),
            ("plan switch", "plan_cache_switch_us"), ("rest", "rest_us"),
            ("1st call", "first_call_us")]
    print(f"{'op':<26}" + "".join(f"{c:>12}" for c, _ in cols), file=err)
    verdicts = []
    for r in rows:
        if "error" in r:
            print(f"{r['op']:<26} error: {r['error']}", file=err)
            continue
        print(f"{r['op']:<26}" + "".join(f"{r[k]:>12.2f}" for _, k in cols), file=err)
        verdicts.append(f"{r['op']} {'meets' if r['excess_over_torch_op_us'] <= goal_us else 'misses'}")
    if rows and "small_torch_add_us" in rows[-1]:
        print(f"torch.add(out=) on 16 floats: {rows[-1]['small_torch_add_us']:.2f} us; Python's "
              f"torch.cuda.current_stream().cuda_stream: {rows[-1]['stream_lookup_python_us']:.2f} us",
              file=err)
    print(f"goal: mlakit call <= torch one-op + {goal_us:g} us: " + ", ".join(verdicts), file=err)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tokens", type=int, nargs="+", default=[1, 8, 64])
    p.add_argument("--pages", type=int, default=8462)
    p.add_argument("--page-size", type=int, default=64)
    p.add_argument("--topk", type=int, default=2048)
    p.add_argument("--valid", type=int, default=None, help="valid entries a row (default: topk)")
    p.add_argument("--calls", type=int, default=3000, help="timed calls per host figure")
    p.add_argument("--batch", type=int, default=50, help="calls between untimed drains")
    p.add_argument("--gpu-iters", type=int, default=50)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--breakdown-tokens", type=int, default=8, help="T (or b) of the breakdown's shape")
    p.add_argument("--goal-us", type=float, default=6.0, help="allowed excess over the torch one-op")
    p.add_argument("--only", choices=["breakdown", "paths"], default=None,
                   help="only the breakdown, or only the DSA paths and GPU times")
    args = p.parse_args()

    if args.pages * args.page_size < args.topk:
        print("bench_python_host: --pages * --page-size must be at least --topk", file=sys.stderr)
        return 2
    reason = missing()
    if reason:
        print(f"bench_python_host: skipped: {reason}")
        return 0
    device = torch.device("cuda", torch.cuda.current_device())
    valid = args.topk if args.valid is None else args.valid
    sync = torch.cuda.synchronize
    common = {
        "bench": "python_host",
        "git": git_revision(),
        "mlakit": mlakit.__version__,
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(device),
        "route": "exchange" if mlakit.torch_integration()["exchange_api"] else "dlpack",
    }
    rows = []
    err = sys.stderr
    if args.only != "paths":
        print_breakdown(breakdown(args.breakdown_tokens, args.calls, args.batch, common), args.goal_us, err)
        if args.only == "breakdown":
            return 0
    for T in args.tokens:
        q_nope, q_pe, ckv, kpe, idx = make_inputs(T, args.pages, args.page_size, args.topk, valid,
                                                  device, args.seed)
        out = torch.empty(T, 16, 512, dtype=torch.bfloat16, device=device)
        lse = torch.empty(T, 16, dtype=torch.float32, device=device)
        plan = mlakit.plan_info(T, args.pages, args.page_size, args.topk, device=device.index)
        shape = {"T": T, "num_pages": args.pages, "page_size": args.page_size, "topk": args.topk,
                 "valid": valid, "kernel_key": plan["kernel_key"], "tiling": plan["tiling"]}
        run, raw, ops = mlakit.dsa_sparse_attention, mlakit._C.dsa_sparse_attention, torch.ops.mlakit
        a, b = torch.zeros(16, device=device), torch.zeros(16, device=device)
        paths = {
            "direct": lambda: run(q_nope, q_pe, ckv, kpe, idx, CONTEST_SM_SCALE, out=out, lse=lse),
            "direct-allocating": lambda: run(q_nope, q_pe, ckv, kpe, idx, CONTEST_SM_SCALE),
            "extension": lambda: raw(q_nope, q_pe, ckv, kpe, idx, CONTEST_SM_SCALE, out, lse, None),
            "torch.ops": lambda: ops.dsa_sparse_attention(q_nope, q_pe, ckv, kpe, idx,
                                                          CONTEST_SM_SCALE),
            "torch.ops-out": lambda: ops.dsa_sparse_attention_out(q_nope, q_pe, ckv, kpe, idx,
                                                                  CONTEST_SM_SCALE, out, lse),
            "yardstick torch.add(out=)": lambda: torch.add(a, b, out=a),
        }
        for path, fn in paths.items():
            us = host_times(fn, args.calls, args.batch, sync)
            row = {**common, **shape, "what": "host_us", "path": path,
                   "median_us": round(statistics.median(us), 3),
                   "p90_us": round(percentile(us, 0.9), 3), "calls": len(us)}
            rows.append(row)
            print(json.dumps(row), flush=True)
        direct = paths["direct"]
        b2b = gpu_back_to_back(direct, 200, device)
        cold = gpu_cold(direct, args.gpu_iters, device)
        row = {**common, **shape, "what": "gpu_us", "path": "direct",
               "back_to_back_us": round(b2b, 3), "cold_median_us": round(statistics.median(cold), 3),
               "cold_p90_us": round(percentile(cold, 0.9), 3), "iters": len(cold)}
        rows.append(row)
        print(json.dumps(row), flush=True)

    print(f"\nmlakit {common['mlakit']} ({common['route']} route), torch {common['torch']}, "
          f"{common['device']}, git {common['git']}", file=err)
    print(f"{'T':>4}  {'path':<27} {'host median us':>14} {'p90':>8}", file=err)
    for r in rows:
        if r["what"] == "host_us":
            print(f"{r['T']:>4}  {r['path']:<27} {r['median_us']:>14.2f} {r['p90_us']:>8.2f}",
                  file=err)
        else:
            print(f"{r['T']:>4}  GPU: back to back {r['back_to_back_us']:.2f} us/call, cold L2 "
                  f"median {r['cold_median_us']:.2f} us (p90 {r['cold_p90_us']:.2f})", file=err)
    worst = max(r["median_us"] for r in rows if r["what"] == "host_us" and r.get("path") == "direct")
    print(f"host cost of the preallocated call: worst median {worst:.2f} us "
          f"({'meets' if worst <= 8.0 else 'misses'} the 8 us goal)", file=err)
    return 0


if __name__ == "__main__":
    sys.exit(main())
