#!/usr/bin/env python3
"""Draws a bench JSON Lines file (written by `mlakit bench --out DIR`) as one PNG:
  left:  span per workload (median, whiskers p10..p90), one bar per kernel (or kernel/tiling)
  right: effective bandwidth (gathered bytes / span) against bytes per call, with the measured
         device-to-device copy ceiling as a line: the roofline of a gather-bound kernel.
The newest record per (device, kernel, tiling, suite, workload) is used, as `mlakit report` does.

Exit codes: 0 ok, 2 bad input or a picture that cannot be drawn, 3 matplotlib missing. Every
failure is one line on stderr (`mlakit report` quotes it), never a traceback.
"""
import argparse
import json
import sys


def load_records(path):
    latest = {}
    order = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                r = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}: line {number}: {e}") from None
            if not isinstance(r, dict):
                raise ValueError(f"{path}: line {number}: expected an object")
            key = tuple(r.get(k, "") for k in ("device", "kernel", "tiling", "suite", "workload"))
            if key not in latest:
                order.append(key)
            latest[key] = r
    return [latest[k] for k in order]


def series_of(records):
    """Bar series: per kernel, or per kernel/tiling when one kernel ran several tilings on a
    workload; the device joins the label when there are several."""
    tilings = {}
    for r in records:
        tilings.setdefault((r.get("device"), r.get("kernel"), r.get("workload")), set()).add(r.get("tiling"))
    by_tiling = any(len(t) > 1 for t in tilings.values())
    many_devices = len({r.get("device") for r in records}) > 1

    def label(r):
        s = r.get("kernel", "?")
        if by_tiling:
            s += " " + str(r.get("tiling", "?"))
        if many_devices:
            s += " @ " + str(r.get("device", "?"))
        return s

    return label


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--in", dest="inp", required=True, help="bench JSON Lines file")
    ap.add_argument("--png", required=True, help="picture to write")
    ap.add_argument("--title", default="", help="figure title (default: devices and revisions)")
    args = ap.parse_args()
    if not args.png.lower().endswith(".png"):
        print(f"plot_report.py: --png {args.png}: expected a file name ending in .png", file=sys.stderr)
        return 2

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_report.py: matplotlib is not installed (pip install 'mlakit[plot]', or "
              "python3 -m pip install matplotlib)", file=sys.stderr)
        return 3

    try:
        records = load_records(args.inp)
    except (OSError, ValueError) as e:
        print(f"plot_report.py: {e}", file=sys.stderr)
        return 2
    records = [r for r in records if isinstance(r.get("median_us"), (int, float)) and r["median_us"] > 0]
    if not records:
        print(f"plot_report.py: {args.inp} holds no timed records", file=sys.stderr)
        return 2

    try:
        draw(plt, records, args)
    except Exception as e:  # a picture that cannot be drawn or written: one line, not a traceback
        print(f"plot_report.py: cannot draw {args.png}: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    return 0


def draw(plt, records, args):
    label = series_of(records)
    workloads = list(dict.fromkeys(r.get("workload", "?") for r in records))
    series = list(dict.fromkeys(label(r) for r in records))
    cell = {(label(r), r.get("workload", "?")): r for r in records}

    # Bars on top (as wide as the workloads need, within reason), the roofline below.
    width_in = min(24.0, max(10.0, 4.0 + 0.22 * len(workloads) * len(series)))
    fig, (ax_bar, ax_roof) = plt.subplots(2, 1, figsize=(width_in, 10),
                                          gridspec_kw={"height_ratios": [3, 2]})
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    width = 0.8 / len(series)
    for i, s in enumerate(series):
        xs, ys, lo, hi = [], [], [], []
        for j, w in enumerate(workloads):
            r = cell.get((s, w))
            if r is None:
                continue
            m = r["median_us"]
            xs.append(j - 0.4 + width * (i + 0.5))
            ys.append(m)
            lo.append(max(0.0, m - (r.get("p10_us") or m)))
            hi.append(max(0.0, (r.get("p90_us") or m) - m))
        ax_bar.bar(xs, ys, width, yerr=[lo, hi], capsize=2, label=s, color=colors[i % len(colors)])
    ax_bar.set_xticks(range(len(workloads)))
    ax_bar.set_xticklabels(workloads, rotation=60, ha="right", fontsize=8)
    ax_bar.set_ylabel("span per call, us (median; whiskers p10..p90)")
    ax_bar.set_title("latency per workload (cold L2)")
    ax_bar.grid(axis="y", alpha=0.3)
    ax_bar.legend(fontsize=8)

    plotted = False
    for i, s in enumerate(series):
        pts = [r for r in records if label(r) == s and r.get("bytes")]
        if pts:
            plotted = True
            ax_roof.scatter([r["bytes"] / 1e6 for r in pts], [r.get("gbps", 0) for r in pts],
                            s=18, label=s, color=colors[i % len(colors)])
    ceilings = {}
    for r in records:
        if r.get("ceiling_gbps"):
            ceilings[r.get("device", "?")] = r["ceiling_gbps"]
    for k, (dev, gbps) in enumerate(sorted(ceilings.items())):
        ax_roof.axhline(gbps, linestyle="--", color="gray" if k == 0 else colors[(k + 3) % len(colors)])
        ax_roof.annotate(f"copy ceiling {dev}: {gbps:.0f} GB/s", (0.02, gbps), xycoords=("axes fraction", "data"),
                         va="bottom", fontsize=8)
    ax_roof.set_xscale("log")
    ax_roof.set_xlabel("bytes gathered per call, MB (log)")
    ax_roof.set_ylabel("effective bandwidth, GB/s")
    ax_roof.set_title("bandwidth vs the copy ceiling")
    top = max([r.get("gbps") or 0 for r in records] + list(ceilings.values()))
    ax_roof.set_ylim(0, 1.12 * top if top > 0 else 1)
    if plotted:
        ax_roof.legend(fontsize=8, loc="lower right")
    ax_roof.grid(alpha=0.3)

    title = args.title
    if not title:
        devices = ", ".join(sorted({str(r.get("device", "?")) for r in records}))
        revisions = ", ".join(sorted({str(r.get("git", "?")) for r in records}))
        title = f"mlakit bench: {devices} (git {revisions})"
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(args.png, dpi=120)


if __name__ == "__main__":
    sys.exit(main())
