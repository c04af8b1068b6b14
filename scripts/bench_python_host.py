#!/usr/bin/env python3
"""Host cost and GPU time of one mlakit.dsa_sparse_attention call from Python.

Host time: perf_counter around each call, preallocated out/lse, no synchronization inside a
batch; the stream is drained between batches (untimed) so the launch queue never fills and blocks
a launch. The median over all calls is the figure (goal: <= 8 us per call). The same is measured
for the other ways in (outputs allocated by the call, torch.ops, the raw extension) and for a
small PyTorch op as a yardstick.

GPU time: (1) back to back, the calls queued behind a busy-wait kernel so host time never shows,
events around the batch / calls; (2) one call at a time with a cold L2 (a buffer of twice the L2
written before each) behind a busy-wait, events around the call: median and p90. The C++
workbench (`mlakit bench`) is the reference for GPU spans (CUPTI); this is the Python view.

Output: one JSON line per result on stdout, a summary table on stderr.

    PYTHONPATH=build/python python3 scripts/bench_python_host.py --tokens 1 8 64
    MLAKIT_NO_DLPACK_EXCHANGE=1 ...   # the same through __dlpack__ (older PyTorch's route)
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch

import mlakit

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
    args = p.parse_args()

    if not torch.cuda.is_available():
        sys.exit("bench_python_host: needs a CUDA device")
    if args.pages * args.page_size < args.topk:
        sys.exit("bench_python_host: --pages * --page-size must be at least --topk")
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

    err = sys.stderr
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


if __name__ == "__main__":
    main()
