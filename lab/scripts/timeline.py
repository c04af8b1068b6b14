#!/usr/bin/env python3
"""Phases of the per-CTA timeline a MLAKIT_TIMELINE build writes (src/kernels/common/timeline.cuh).

Usage:
  cmake -S . -B build-tl -G Ninja -DCMAKE_BUILD_TYPE=Release -DMLAKIT_TIMELINE=ON \\
        -DMLAKIT_BUILD_TESTS=OFF -DMLAKIT_BUILD_PYTHON=OFF && cmake --build build-tl --target mlakit_cli
  MLAKIT_TIMELINE_OUT=tl.txt build-tl/mlakit bench --suite dsa-contest --no-verify --no-floor \\
        --warmup 1 --iters 3
  python3 lab/scripts/timeline.py tl.txt --group 7     # 7 launches per workload: keep the last of each

Every launch appends "L <kernel> <ctas>" and one line of 10 numbers per CTA (the Slot enum of
timeline.cuh). For each launch kept, this prints the median over the CTAs that computed of each
phase in SM cycles, and the in-kernel span (first CTA start to last CTA stop, %globaltimer).
A bench run launches a workload several times (verification off: warm-up + iterations + the
planning launch), so --group N keeps the last launch of every N. --when prints, instead, each
stamp's spread over the CTAs on the %globaltimer axis (clock stamps converted at the launch's
measured clock rate): the skew between CTAs that the medians hide. --by-sm STAMP prints how far
apart the CTAs reach one stamp in each kept launch, each SM's mean, and whether the same SMs are
late in every launch (the correlation of the SMs' means over two halves of the launches).
"""
import argparse
import statistics
import sys

SLOTS = dict(start=0, sliced=1, stored=2, met=3, merged=4, count=5, stop=6, sm=7, start_ns=8, stop_ns=9)

# (column, from slot, to slot): a phase is the difference of two clock stamps of one CTA. Every
# kernel marks the same boundaries of its body (timeline::phase).
PHASES = [
    ("slice", "start", "sliced"),   # the CTA's work known: index row compacted (dsa), schedule (mla)
    ("work", "sliced", "stored"),   # its rows gathered and computed, the result or partial out
    ("meet", "stored", "met"),      # split rows: until every CTA of the row (item) is out
    ("merge", "met", "merged"),     # split rows: this CTA's share of the merge
]

# Slots --when does not convert: values, and the start and stop it reads from %globaltimer.
NOT_CLOCK_STAMPS = {"count", "sm", "start_ns", "stop_ns", "start", "stop"}


def phases_of(launch):
    return PHASES


def read(path):
    launches = []
    for line in open(path):
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "L":
            launches.append({"kernel": parts[1], "ctas": []})
        else:
            row = [int(x) for x in parts]
            launches[-1]["ctas"].append(row + [0] * (len(SLOTS) - len(row)))  # files of fewer slots: 0 = unstamped
    return launches


def clock_rate(ctas):
    """SM cycles per ns: the median over `ctas` of clock cycles over %globaltimer ns, start to stop;
    nan for none."""
    rates = [(c[SLOTS["stop"]] - c[SLOTS["start"]]) / (c[SLOTS["stop_ns"]] - c[SLOTS["start_ns"]])
             for c in ctas if c[SLOTS["stop_ns"]] > c[SLOTS["start_ns"]]]
    return statistics.median(rates) if rates else float("nan")


def summary(launch):
    ran = [c for c in launch["ctas"] if c[SLOTS["start_ns"]]]
    worked = [c for c in ran if c[SLOTS["stored"]]]
    t0 = min(c[SLOTS["start_ns"]] for c in ran)
    span_us = (max(c[SLOTS["stop_ns"]] for c in ran) - t0) / 1000
    ghz = clock_rate([c for c in ran if c[SLOTS["stop_ns"]] - c[SLOTS["start_ns"]] > 2000])
    out = {"ctas": len(ran), "worked": len(worked), "span_us": span_us, "ghz": ghz}
    for name, a, b in phases_of(launch):
        v = [c[SLOTS[b]] - c[SLOTS[a]] for c in worked if c[SLOTS[a]] and c[SLOTS[b]]]
        out[name] = statistics.median(v) if v else None
    return out


def time_axis(launch):
    """The CTAs of a launch that ran, its first CTA's %globaltimer start t0, and a function giving a
    CTA's clock stamp in ns after t0, converted at the launch's measured clock rate (that of every
    CTA when none ran 2 us; 1 cycle per ns if none ran at all)."""
    ran = [c for c in launch["ctas"] if c[SLOTS["start_ns"]]]
    ghz = summary(launch)["ghz"]
    if ghz != ghz:
        ghz = clock_rate(ran)
        ghz = 1.0 if ghz != ghz else ghz
    t0 = min(c[SLOTS["start_ns"]] for c in ran)
    return ran, t0, lambda c, slot: c[SLOTS["start_ns"]] - t0 + (c[slot] - c[SLOTS["start"]]) / ghz


def stamp_times(launch, name):
    """(SM, ns after the launch's first CTA start) of every CTA that stamped clock stamp `name`."""
    ran, _, to_ns = time_axis(launch)
    slot = SLOTS[name]
    return [(c[SLOTS["sm"]], to_ns(c, slot)) for c in ran if c[slot]]


def when(launch):
    """Each clock stamp on the %globaltimer axis: ns after the launch's first CTA start, as
    (stamp, CTAs that stamped it, min, median, p90, max), the CTAs' starts first, the stamps in
    the order of their medians, the stops last. Shows the skew between CTAs that per-CTA phase
    medians hide (for example how long after the median CTA's store the last piece of a split
    item arrives)."""
    ran, t0, to_ns = time_axis(launch)

    def spread(name, values):
        v = sorted(values)
        return (name, len(v), v[0], v[len(v) // 2], v[int(len(v) * 0.9)], v[-1])

    stamps = [spread(name, [to_ns(c, slot) for c in ran if c[slot]])
              for name, slot in SLOTS.items() if name not in NOT_CLOCK_STAMPS and any(c[slot] for c in ran)]
    return ([spread("start", [c[SLOTS["start_ns"]] - t0 for c in ran])] + sorted(stamps, key=lambda r: r[3]) +
            [spread("stop", [c[SLOTS["stop_ns"]] - t0 for c in ran])])


def by_sm(launches, name):
    """How far apart the CTAs reach stamp `name`, and whether the same SMs are late every time: per
    launch (first, median, last) in ns; each SM's mean over the launches; and the correlation of
    the SMs' means over the first half of the launches with those over the second half (near 1: the
    order is the SMs' own, not chance; None with fewer than two launches or SMs)."""
    spreads, per_sm = [], {}
    for launch in launches:
        times = stamp_times(launch, name)
        if not times:
            continue
        v = sorted(t for _, t in times)
        spreads.append((v[0], v[len(v) // 2], v[-1]))
        for sm, t in times:
            per_sm.setdefault(sm, []).append(t)
    means = {sm: statistics.mean(v) for sm, v in per_sm.items()}
    halves = {sm: (statistics.mean(v[:len(v) // 2]), statistics.mean(v[len(v) // 2:]))
              for sm, v in per_sm.items() if len(v) >= 2}
    try:  # Pearson's; fewer than two SMs, or a half where every SM is equal, has no order to compare
        corr = statistics.correlation([h[0] for h in halves.values()], [h[1] for h in halves.values()])
    except statistics.StatisticsError:
        corr = None
    return spreads, means, corr


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file")
    ap.add_argument("--group", type=int, default=1, help="launches per workload; the last of each is kept")
    ap.add_argument("--when", action="store_true",
                    help="each stamp's spread over the CTAs in ns after the launch's start, instead of phases")
    ap.add_argument("--by-sm", metavar="STAMP",
                    help="how far apart the CTAs reach STAMP (e.g. stored) over the kept launches, and "
                         "whether the same SMs are late every time, instead of phases")
    args = ap.parse_args()
    launches = read(args.file)
    if args.group < 1 or len(launches) % args.group:
        sys.exit(f"{len(launches)} launches do not split into groups of {args.group}")
    kept = launches[args.group - 1::args.group]
    if args.by_sm:
        if args.by_sm not in SLOTS or args.by_sm in NOT_CLOCK_STAMPS:
            sys.exit(f"--by-sm: {args.by_sm} is not a clock stamp")
        spreads, means, corr = by_sm(kept, args.by_sm)
        if not spreads:
            sys.exit(f"--by-sm: no CTA stamped {args.by_sm}")
        print(f"# {args.by_sm} over {len(spreads)} launches: us after the first CTA's start, first / median / last CTA")
        for i, (lo, med, hi) in enumerate(spreads):
            print(f"{i:>3} {lo / 1000:9.2f} {med / 1000:9.2f} {hi / 1000:9.2f}   last - median {(hi - med) / 1000:.2f}")
        order = sorted(means, key=lambda sm: means[sm])
        print("# per-SM mean, us: earliest " + ", ".join(f"{sm}: {means[sm] / 1000:.2f}" for sm in order[:6]))
        print("#                  latest   " + ", ".join(f"{sm}: {means[sm] / 1000:.2f}" for sm in order[-6:]))
        print("# the SMs' order, first half of the launches against the second: correlation " +
              ("-" if corr is None else f"{corr:.2f}"))
        return
    if args.when:
        for i, launch in enumerate(kept):
            print(f"# {i} {launch['kernel']}: ns after the first CTA's start (min / median / p90 / max over the CTAs)")
            for name, n, lo, med, p90, hi in when(launch):
                print(f"{name:>14} {n:6d} {lo:9.0f} {med:9.0f} {p90:9.0f} {hi:9.0f}")
        return
    shown = None
    for i, launch in enumerate(kept):
        phases = phases_of(launch)
        if phases is not shown:  # a header for each run of launches of one kernel family
            head = ["#", "ctas", "work", "span_us", "GHz"] + [p[0] for p in phases]
            print(" ".join(f"{h:>7}" for h in head))
            shown = phases
        s = summary(launch)
        cells = [str(i), str(s["ctas"]), str(s["worked"]), f"{s['span_us']:.2f}", f"{s['ghz']:.2f}"]
        cells += ["-" if s[p[0]] is None else f"{s[p[0]]:.0f}" for p in phases]
        print(" ".join(f"{c:>7}" for c in cells))


if __name__ == "__main__":
    main()
