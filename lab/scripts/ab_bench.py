#!/usr/bin/env python3
"""A/B timing of two or more mlakit builds in alternating passes, as docs/workbench.md asks for a
claim against a baseline: the builds are timed in one call on one machine, pass after pass, each
pass starting with the next build, so a drift of the clocks or of the machine lands on all of them.

Usage:
  python3 lab/scripts/ab_bench.py base=build/mlakit new=/tmp/mlakit-new --suite dsa-serving --heads 128
  python3 lab/scripts/ab_bench.py default=build/mlakit h64=build/mlakit@s8n64x4m1p4g3w1h64 \\
          --suite dsa-contest --heads 128 --kv fp8
  python3 lab/scripts/ab_bench.py base=build/mlakit pf1=build/variants/pf1/mlakit --suite dsa-serving \\
          --heads 64 --passes 3 -- --warmup 5

Each build runs `BINARY bench --suite S [--heads H] [--kv K] [--tiling T] --no-floor --quiet
--out DIR` (with --no-verify unless --verify) once per pass; anything after `--` is passed on. A
build written NAME=PATH@TILING runs with its own tiling (in place of --tiling), so one binary can
be timed against itself with another tiling on every workload, row by row.
The spans are read from the bench.jsonl each run appends (median_us, the CUPTI span of one call
with a cold L2, as `mlakit bench` measures it), not from its table. Printed: a Markdown table of
every build's span per workload and pass, each build's mean over the passes against the first
build's, the suite means, and (two or more passes) how far each build's passes lie apart: a ratio
closer to 1 than that spread is not a difference. Paste it into the devlog with the command line
that produced it.

Exit status: 0; 1 when a run failed, a workload is missing from a run or (--verify) failed
verification; 2 for bad arguments. The records stay in --out (default: a temporary folder).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


class Failure(Exception):
    """A run that gave no usable records (exit status 1)."""


def parse_builds(specs):
    """NAME=PATH[@TILING] specs, in order; the first is the baseline. Returns the (name, path) pairs
    and {name: tiling} of the builds that name one."""
    builds, tilings = [], {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if "@" in path:
            path, _, tiling = path.rpartition("@")
            if not tiling.isalnum():
                raise ValueError(f"build '{spec}': TILING after '@' must be a tiling name (for example "
                                 "s8n64x4m1p4g3w1h64)")
            tilings[name] = tiling
        if not sep or not name or not path:
            raise ValueError(f"build '{spec}': expected NAME=PATH (for example base=build/mlakit)")
        if not name.replace("-", "").replace("_", "").isalnum():
            raise ValueError(f"build '{spec}': NAME may hold letters, digits, '-' and '_' only")
        if any(name == b[0] for b in builds):
            raise ValueError(f"build '{spec}': the name '{name}' is given twice")
        if not os.path.isfile(path) or not os.access(path, os.X_OK):
            raise ValueError(f"build '{spec}': {path} is not an executable file")
        builds.append((name, path))
    if len(builds) < 2:
        raise ValueError("builds: give at least two NAME=PATH (the first is the baseline)")
    return builds, tilings


def bench_command(path, args, out_dir, tiling=None):
    cmd = [path, "bench", "--suite", args.suite, "--no-floor", "--quiet", "--out", str(out_dir)]
    if args.heads:
        cmd += ["--heads", str(args.heads)]
    if args.kv:
        cmd += ["--kv", args.kv]
    if tiling or args.tiling:
        cmd += ["--tiling", tiling or args.tiling]
    if not args.verify:
        cmd.append("--no-verify")
    return cmd + args.extra


def read_records(out_dir):
    """{workload: record} of one run's bench.jsonl (the run wrote a fresh folder)."""
    path = Path(out_dir) / "bench.jsonl"
    if not path.is_file():
        raise Failure(f"{path} was not written (no GPU? without one `mlakit bench` runs the CPU reference)")
    records = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise Failure(f"{path}:{number}: not JSON ({e})") from e
        if not isinstance(record.get("median_us"), (int, float)):
            raise Failure(f"{path}:{number}: no median_us")
        records[record["workload"]] = record
    if not records:
        raise Failure(f"{path} holds no records")
    return records


def run_passes(builds, args, out_root):
    """spans[name][workload] = [span of pass 1, ...]; records of the last pass per build."""
    spans = {name: {} for name, _ in builds}
    last = {}
    order = None
    method = None
    for k in range(args.passes):
        turn = builds[k % len(builds):] + builds[:k % len(builds)]
        for name, path in turn:
            out_dir = Path(out_root) / f"pass{k + 1}-{name}"
            out_dir.mkdir(parents=True)
            cmd = bench_command(path, args, out_dir, args.build_tilings.get(name))
            done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if done.returncode != 0:
                tail = "\n".join(done.stdout.splitlines()[-5:])
                raise Failure(f"{name}, pass {k + 1}: `{' '.join(cmd)}` exited {done.returncode}\n{tail}")
            records = read_records(out_dir)
            if order is None:
                order = list(records)
            missing = [w for w in order if w not in records]
            if missing:
                raise Failure(f"{name}, pass {k + 1}: no record of {', '.join(missing)}")
            if args.verify:
                bad = [w for w in order if records[w].get("verified") is not True]
                if bad:
                    raise Failure(f"{name}, pass {k + 1}: not verified: {', '.join(bad)}")
            methods = {str(r.get("method")) for r in records.values()} | ({method} if method else set())
            if len(methods) > 1:
                raise Failure(f"{name}, pass {k + 1}: spans measured different ways ({'; '.join(sorted(methods))}): "
                              "a comparison holds only between spans measured the same way")
            method = methods.pop()
            for w in order:
                spans[name].setdefault(w, []).append(records[w]["median_us"])
            last[name] = records
    return order, spans, last


def table(builds, order, spans, last):
    """The Markdown the script prints (one row per workload, one column per build)."""
    base = builds[0][0]
    lines = []
    first = last[base][order[0]]
    suite = first.get("suite", "?").removeprefix("suite ")  # records hold the bench's title, "suite NAME"
    lines.append(f"{first.get('device', '?')}, SM clock {first.get('sm_clock_mhz', '?')} MHz, suite "
                 f"{suite}, kernel {first.get('kernel', '?')}; span = median_us of "
                 f"`mlakit bench` ({first.get('method', '?')}), us, passes in the order run")
    throttled = sorted({f"{name}: {r['throttle']}" for name, _ in builds for r in last[name].values()
                        if r.get("throttle") not in (None, "", "none")})
    if throttled:
        lines.append("clock throttle reported: " + "; ".join(throttled))
    lines.append("")
    head = ["workload"] + [f"{name}" for name, _ in builds] + [f"{name} / {base}" for name, _ in builds[1:]]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("| " + " | ".join(["---"] * len(head)) + " |")
    # means[name][w]: the build's mean span of workload w over the passes.
    means = {name: {w: statistics.fmean(spans[name][w]) for w in order} for name, _ in builds}
    for w in order:
        row = [w] + [" / ".join(f"{v:.2f}" for v in spans[name][w]) for name, _ in builds]
        row += [f"{means[name][w] / means[base][w]:.3f}" for name, _ in builds[1:]]
        lines.append("| " + " | ".join(row) + " |")
    suite_mean = {name: statistics.fmean(m.values()) for name, m in means.items()}
    row = ["mean"] + [f"{suite_mean[name]:.2f}" for name, _ in builds]
    row += [f"{suite_mean[name] / suite_mean[base]:.3f}" for name, _ in builds[1:]]
    lines.append("| " + " | ".join(row) + " |")
    tilings = {name: sorted({r.get("tiling", "?") for r in last[name].values()}) for name, _ in builds}
    lines.append("")
    lines.append("tilings: " + "; ".join(f"{name} {', '.join(t)}" for name, t in tilings.items()))
    passes = len(spans[base][order[0]])
    if passes > 1:
        lines.append(noise(builds, order, spans, passes))
    return "\n".join(lines)


def noise(builds, order, spans, passes):
    """How far a build's passes lie apart: per workload (max - min) / mean of its spans, the median
    and the largest over the suite, and the suite mean of each pass. A ratio between builds closer to
    1 than that spread is not a difference."""
    parts = []
    for name, _ in builds:
        spread = {w: (max(spans[name][w]) - min(spans[name][w])) / statistics.fmean(spans[name][w]) for w in order}
        worst = max(order, key=lambda w: spread[w])
        per_pass = [statistics.fmean(spans[name][w][k] for w in order) for k in range(passes)]
        parts.append(f"{name} median {100 * statistics.median(spread.values()):.1f} %, largest "
                     f"{100 * spread[worst]:.1f} % ({worst}), suite mean per pass "
                     + " / ".join(f"{m:.2f}" for m in per_pass))
    return "pass to pass, (max - min) / mean of a workload's spans: " + "; ".join(parts)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    extra = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1:]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("builds", nargs="+", metavar="NAME=PATH[@TILING]",
                    help="mlakit binaries, each with its own tiling if given; the first is the baseline")
    ap.add_argument("--suite", required=True, help="the suite to time (dsa-serving, mla-serving, ...)")
    ap.add_argument("--heads", type=int, help="the suite's heads flavour (mlakit bench --heads)")
    ap.add_argument("--kv", choices=["bf16", "fp8"], help="the suite's cache flavour (mlakit bench --kv)")
    ap.add_argument("--tiling", help="one tiling for every run without its own (mlakit bench --tiling)")
    ap.add_argument("--passes", type=int, default=2, help="passes over all builds (default 2)")
    ap.add_argument("--verify", action="store_true", help="verify in every run (default: --no-verify)")
    ap.add_argument("--out", help="folder for the runs' records (must not exist; default: a temporary one)")
    args = ap.parse_args(argv)
    args.extra = extra
    try:
        builds, args.build_tilings = parse_builds(args.builds)
        if args.passes < 1:
            raise ValueError(f"--passes {args.passes}: give 1 or more")
        if args.heads is not None and args.heads < 1:
            raise ValueError(f"--heads {args.heads}: give a head count (16, 32, 64, 128)")
        if args.out and os.path.exists(args.out):
            raise ValueError(f"--out {args.out}: exists; give a new folder so no run reads another's records")
    except ValueError as e:
        print(f"ab_bench: {e}", file=sys.stderr)
        return 2
    try:
        if args.out:
            Path(args.out).mkdir(parents=True)
            out_root = args.out
            order, spans, last = run_passes(builds, args, out_root)
        else:
            with tempfile.TemporaryDirectory(prefix="ab_bench-") as out_root:
                order, spans, last = run_passes(builds, args, out_root)
    except Failure as e:
        print(f"ab_bench: {e}", file=sys.stderr)
        return 1
    print(table(builds, order, spans, last))
    return 0


if __name__ == "__main__":
    sys.exit(main())
