#!/usr/bin/env python3
"""Where a kernel's warps wait, from Nsight Compute's source-level warp-state sampling: the stall
samples per SASS instruction and per stall reason, for the whole kernel and for code regions (a
warp-specialized kernel's producer and consumer branches), of one report or of two side by side.
No GPU needed once the report exists.

Usage:
  python3 lab/scripts/ncu_stalls.py REPORT [REPORT_B] [--top N] [--region NAME=START..END ...]
                                    [--kernel REGEX] [--not-issued] [--names A,B]

REPORT: an .ncu-rep recorded with the SourceCounters and WarpStateStats sections (`mlakit run|bench
... --prof ncu-stalls`), read through `ncu --import REPORT --page source --csv --print-source sass`
(ncu from $NCU, or where `--prof ncu` finds it), or that CSV itself. Printed per kernel:
  - the samples of each stall reason over the kernel (and, with --region, over each region),
    largest first, with their share;
  - the --top N instructions (default 12) by samples: offset in the kernel, SASS, samples, and the
    three largest reasons at that instruction.
--region NAME=START..END sums the instructions from the first whose SASS matches the regex START
up to (not including) the next one matching END, END empty for the kernel's end; for the h64
kernel of dsa_decode: producer=USETMAXREG.DEALLOC.. and consumer=USETMAXREG.TRY_ALLOC..USETMAXREG.DEALLOC.
With REPORT_B the reason table has both reports' samples, each as a share of its own total, so two
builds or two shapes compare. --not-issued reads the samples taken while the warp was not issued.

Exit status: 0; 2 for bad arguments, a file that cannot be read, or no kernel in it.
docs/workbench.md, "Profiling modes".
"""
import argparse
import csv
import glob
import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ALL = "Warp Stall Sampling (All Samples)"
NOT_ISSUED = "Warp Stall Sampling (Not-issued Samples)"


class BadInput(Exception):
    """A report that cannot be read (exit status 2)."""


class Kernel:
    """One kernel's rows of the source page: SASS text, address, samples and reasons per row."""

    def __init__(self, name):
        self.name = name
        self.rows = []  # (address, sass, samples, {reason: samples})


def find_ncu():
    """$NCU, then where `mlakit --prof ncu` looks (src/workbench/profiling.cpp, find_ncu): $PATH,
    /usr/local/cuda/bin/ncu, the newest /opt/nvidia/nsight-compute/*/ncu."""
    versions = sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"))
    for tool in (os.environ.get("NCU"), shutil.which("ncu"), "/usr/local/cuda/bin/ncu", *versions[::-1]):
        if tool and os.path.isfile(tool) and os.access(tool, os.X_OK):
            return tool
    raise BadInput("an .ncu-rep needs ncu to read it (set $NCU, put ncu on PATH or install Nsight Compute), "
                   "or pass the CSV of `ncu --import REPORT --page source --csv --print-source sass`")


def read_source_page(path):
    p = Path(path)
    if not p.is_file():
        raise BadInput(f"{path}: no such file")
    if p.suffix == ".ncu-rep":
        run = subprocess.run([find_ncu(), "--import", str(p), "--page", "source", "--csv", "--print-source", "sass"],
                             capture_output=True, text=True)
        if run.returncode != 0:
            raise BadInput(f"{path}: ncu --import failed: {run.stderr.strip()[:300]}")
        return run.stdout
    return p.read_text(errors="replace")


def parse(text, not_issued=False):
    """[Kernel] from the source page's CSV: a "Kernel Name" line, the header, then one row per SASS
    instruction, for each kernel of the report."""
    kernels = []
    header = None
    for row in csv.reader(io.StringIO(text)):
        if not row:
            continue
        if row[0] == "Kernel Name":
            kernels.append(Kernel(row[1] if len(row) > 1 else "?"))
            header = None
            continue
        if row[0] == "Address":
            header = row
            continue
        if header is None or not kernels or len(row) < len(header):
            continue
        rec = dict(zip(header, row))
        suffix = " (Not Issued)" if not_issued else ""
        reasons = {}
        for col, value in rec.items():
            if col.startswith("stall_") and col.endswith(suffix) and (not_issued or "(Not Issued)" not in col):
                n = number(value)
                if n:
                    reasons[col[len("stall_"):len(col) - len(suffix)]] = n
        samples = number(rec.get(NOT_ISSUED if not_issued else ALL, "0"))
        kernels[-1].rows.append((rec.get("Address", ""), rec.get("Source", "").strip(), samples, reasons))
    return [k for k in kernels if k.rows]


def number(text):
    try:
        return int(float(text.replace(",", "")))
    except ValueError:
        return 0


def parse_region(spec):
    name, sep, rng = spec.partition("=")
    start, dots, end = rng.partition("..")
    if not sep or not name or not dots or not start:
        raise ValueError(f"--region '{spec}': expected NAME=START..END (END may be empty)")
    try:
        return name, re.compile(start), re.compile(end) if end else None
    except re.error as e:
        raise ValueError(f"--region '{spec}': bad regex ({e})") from None


def region_rows(kernel, start, end):
    """The rows from the first matching `start` up to the next matching `end` (None: to the end)."""
    out, inside = [], False
    for row in kernel.rows:
        if not inside:
            inside = bool(start.search(row[1]))
        elif end is not None and end.search(row[1]):
            break
        if inside:
            out.append(row)
    return out


def totals(rows):
    t = {}
    for _, _, _, reasons in rows:
        for r, n in reasons.items():
            t[r] = t.get(r, 0) + n
    return t


def reason_table(label, columns):
    """Markdown-ish rows: reason, then samples and share for each (name, totals) column."""
    order = sorted({r for _, t in columns for r in t}, key=lambda r: -max(t.get(r, 0) for _, t in columns))
    out = [f"   {label}: " + ", ".join(f"{name} {sum(t.values())} samples" for name, t in columns)]
    width = max([len(r) for r in order] + [6])
    out.append("   " + f"{'reason':<{width}}" + "".join(f"  {name:>16}" for name, _ in columns))
    for r in order:
        cells = []
        for _, t in columns:
            total = sum(t.values()) or 1
            cells.append(f"  {t.get(r, 0):>8} {100.0 * t.get(r, 0) / total:5.1f} %")
        out.append("   " + f"{r:<{width}}" + "".join(cells))
    return out


def offset(kernel, address):
    try:
        return f"+0x{int(address, 16) - int(kernel.rows[0][0], 16):05x}"
    except ValueError:
        return address


def report(kernels_by_build, names, top, regions):
    out = []
    first = kernels_by_build[0]
    for i, k in enumerate(first):
        others = [kb[i] if i < len(kb) else None for kb in kernels_by_build[1:]]
        out.append(f"== {k.name}")
        cols = [(names[0], totals(k.rows))] + [(n, totals(o.rows)) for n, o in zip(names[1:], others) if o]
        out += reason_table("kernel", cols)
        for name, start, end in regions:
            rc = [(names[0], totals(region_rows(k, start, end)))]
            rc += [(n, totals(region_rows(o, start, end))) for n, o in zip(names[1:], others) if o]
            if not any(t for _, t in rc):
                out.append(f"   region {name}: no instruction matches '{start.pattern}' or no samples in it")
                continue
            out += reason_table(f"region {name}", rc)
        for label, kern in [(names[0], k)] + [(n, o) for n, o in zip(names[1:], others) if o]:
            ranked = sorted(kern.rows, key=lambda r: -r[2])[:top]
            if not ranked or ranked[0][2] == 0:
                continue
            out.append(f"   top {len(ranked)} instructions, {label}:")
            for addr, sass, samples, reasons in ranked:
                if samples == 0:
                    break
                why = ", ".join(f"{r} {n}" for r, n in sorted(reasons.items(), key=lambda x: -x[1])[:3])
                out.append(f"   {offset(kern, addr)}  {samples:>7}  {sass[:70]:<70}  {why}")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("reports", nargs="+", metavar="REPORT", help="an .ncu-rep or its source-page CSV; a second to compare")
    ap.add_argument("--top", type=int, default=12, help="instructions listed by samples (default 12; 0: none)")
    ap.add_argument("--region", action="append", default=[], metavar="NAME=START..END",
                    help="a code region by the regexes of its first and its end instruction (repeatable)")
    ap.add_argument("--kernel", help="only kernels whose name matches this regex")
    ap.add_argument("--not-issued", action="store_true", help="the samples taken while the warp was not issued")
    ap.add_argument("--names", help="labels of the reports (default A,B)")
    args = ap.parse_args(argv)
    if len(args.reports) > 2:
        print("ncu_stalls: error: REPORT: at most two reports (the second is compared with the first)", file=sys.stderr)
        return 2
    if args.top < 0:
        print(f"ncu_stalls: error: --top must be >= 0; got {args.top}", file=sys.stderr)
        return 2
    names = args.names.split(",") if args.names else ["A", "B"][: len(args.reports)]
    if len(names) != len(args.reports) or not all(names):
        print(f"ncu_stalls: error: --names needs one label per report; got '{args.names}'", file=sys.stderr)
        return 2
    try:
        regions = [parse_region(r) for r in args.region]
        pattern = re.compile(args.kernel) if args.kernel else None
    except (ValueError, re.error) as e:
        print(f"ncu_stalls: error: {e}", file=sys.stderr)
        return 2
    builds = []
    for path in args.reports:
        try:
            kernels = parse(read_source_page(path), args.not_issued)
        except BadInput as e:
            print(f"ncu_stalls: error: {e}", file=sys.stderr)
            return 2
        if pattern:
            kernels = [k for k in kernels if pattern.search(k.name)]
        if not kernels:
            print(f"ncu_stalls: error: {path}: no kernel with source-level samples"
                  + (f" matching '{args.kernel}'" if pattern else "")
                  + " (record with --prof ncu-stalls, or ncu --section SourceCounters --section WarpStateStats)",
                  file=sys.stderr)
            return 2
        builds.append(kernels)
    print("\n".join(report(builds, names, args.top, regions)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
