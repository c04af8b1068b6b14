#!/usr/bin/env python3
"""Compares the SASS of two builds of one translation unit, function by function: what changed in
the machine code when a source change (or a change that should have changed nothing) moved the
time. No GPU needed.

Usage:
  python3 lab/scripts/sass_diff.py A B [--function REGEX] [--region FROM[,TO]] [--count OPS]
                                   [--order OPS [--from REGEX] [--gap N]] [--diff N] [--ignore-registers]
                                   [--names OLD,NEW]
  python3 lab/scripts/sass_diff.py A (--order OPS | --count OPS) [--function REGEX] [--region FROM[,TO]]
                                   [--from REGEX] [--gap N]

A and B: cubins (disassembled with the pinned nvdisasm, .deps/nvdisasm, or $NVDISASM) or the text
of `nvdisasm -c`. lab/scripts/cubin_of.sh compiles one translation unit of a build to a cubin with
the build's own nvcc line (extra flags, such as -D of a variant, after the output path; --rev REV
for the sources of a git revision):

  lab/scripts/cubin_of.sh --rev HEAD~1 build src/kernels/dsa_decode/v2_fused/launch_h64.cu /tmp/old.cubin
  lab/scripts/cubin_of.sh build src/kernels/dsa_decode/v2_fused/launch_h64.cu /tmp/new.cubin
  python3 lab/scripts/sass_diff.py /tmp/old.cubin /tmp/new.cubin --function h64 \\
          --order LDG,SYNCS,LDGSTS,ARRIVES --from USETMAXREG.DEALLOC

Printed per function (matched by its mangled name): the instruction counts of A and B, how many
lines of the two listings differ once addresses and branch labels are taken out ("same code" when
none), and every opcode whose count differs (the mnemonic before its first '.', so LDG.E.128 and
LDG.E count as LDG; the predicate is left out). The counts that say most about a change: BSSY
(a divergent branch's reconvergence), LDL / STL (local memory), LD / ST (generic addressing),
HGMMA, LDGSTS, MUFU. --order prints, for A and B, the sequence of the listed opcodes in program
order with repeats folded (LDGSTS x36) and (+N) where N >= --gap (default 8) other instructions
come between two of them: how a warp's copies are issued, in one burst or spread out; --from starts it at the first instruction that matches (USETMAXREG.DEALLOC: a warp-specialized
kernel's producer branch). --diff N prints up to N lines of a unified diff of each changed
function's normalised listing. --ignore-registers masks register numbers first, so that a function
whose registers were only renamed reads "same code" and the diff shows what moved.
--region FROM[,TO] restricts everything above to one part of each function: from its first
instruction matching FROM up to, not including, the first one after it matching TO (the end
without TO); `--region USETMAXREG.TRY_ALLOC,USETMAXREG.DEALLOC` is a warp-specialized kernel's
consumer branch. A function without FROM says so. --count OPS prints the counts of the listed
opcodes in each build even where they are equal (`--count R2UR,HGMMA,LDL,STL`: per-thread wgmma
descriptors moved to uniform registers, and local memory; mla devlog run 60). With A alone,
--order or --count is required and each function's instruction count, counts and order are
printed (one build's prologue or producer read on its own).

Exit status: 0 (also when the builds differ); 2 for bad arguments or a file that cannot be read.
docs/workbench.md, "SASS of two builds".
"""
import argparse
import collections
import difflib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from sass_listing import demangled, functions, opcode  # noqa: E402  (scripts/: the parser make scan-sass uses)


class BadInput(Exception):
    """A file that cannot be read or disassembled (exit status 2)."""


def nvdisasm():
    tool = os.environ.get("NVDISASM") or str(ROOT / ".deps" / "nvdisasm" / "bin" / "nvdisasm")
    if os.path.isfile(tool) and os.access(tool, os.X_OK):
        return tool
    found = shutil.which("nvdisasm")
    if found:
        return found
    raise BadInput("nvdisasm not found: run `bash scripts/bootstrap.sh nvdisasm` or set NVDISASM")


def read_listing(path):
    """The text of `nvdisasm -c` for a cubin, or the file itself when it is already that text."""
    p = Path(path)
    if not p.is_file():
        raise BadInput(f"{path}: no such file")
    data = p.read_bytes()
    if data[:4] == b"\x7fELF":
        run = subprocess.run([nvdisasm(), "-c", str(p)], capture_output=True, text=True)
        if run.returncode != 0:
            raise BadInput(f"{path}: nvdisasm failed: {run.stderr.strip()[:300]}")
        return run.stdout
    try:
        return data.decode()
    except UnicodeDecodeError as e:
        raise BadInput(f"{path}: neither a cubin nor nvdisasm text ({e})") from None


def order(instructions, ops, start=None, gap=8):
    """The listed opcodes in program order from the first instruction matching `start`, repeats
    folded, and `(+N)` where N >= gap other instructions come between two listed ones (fewer are
    folded over): ['LDG x4', '(+37)', 'SYNCS', '(+80)', 'LDGSTS x36']."""
    seq = []
    begun = start is None
    since = 0
    for ins in instructions:
        if not begun:
            begun = bool(start.search(ins))
            if not begun:
                continue
        op = opcode(ins)
        if op not in ops:
            since += 1
            continue
        if seq and since >= gap:
            seq.append([f"(+{since})", 0])
        if seq and seq[-1][0] == op:
            seq[-1][1] += 1
        else:
            seq.append([op, 1])
        since = 0
    return [op if n <= 1 else f"{op} x{n}" for op, n in seq]


def region(instructions, bounds):
    """The part of a function that --region selects: from its first instruction matching
    bounds[0] up to, not including, the first one after it matching bounds[1] (None: the end).
    None when no instruction matches bounds[0]; the whole function when bounds is None."""
    if bounds is None:
        return instructions
    start, end = bounds
    first = next((i for i, ins in enumerate(instructions) if start.search(ins)), None)
    if first is None:
        return None
    last = len(instructions)
    if end is not None:
        last = next((i for i in range(first + 1, len(instructions)) if end.search(instructions[i])), last)
    return instructions[first:last]


def counts(instructions, ops):
    """'R2UR 168, LDL 20': the count of each listed opcode, in the order given."""
    c = collections.Counter(map(opcode, instructions))
    return ", ".join(f"{op} {c[op]}" for op in ops)


def opcode_list(text):
    """The opcodes of --order or --count ('LDGSTS, UTMALDG'), in the order given, blanks dropped."""
    return [op.strip() for op in text.split(",") if op.strip()]


def selected(keys, pattern):
    """The functions --function keeps (by mangled or readable name) and their readable names."""
    readable = demangled(keys)
    if pattern:
        keys = [k for k in keys if pattern.search(k) or pattern.search(readable[k])]
    return keys, readable


def compare(fa, fb, pattern=None, ops=None, start=None, diff_lines=0, names=("A", "B"), gap=8, bounds=None,
            count_ops=None):
    """The report for the functions of two listings (functions()), as a list of lines."""
    keys, readable = selected(list(fa) + [k for k in fb if k not in fa], pattern)
    out = []
    if not keys:
        out.append("no function" + (f" matches '{pattern.pattern}'" if pattern else " in either listing"))
        return out
    na, nb = names
    for k in keys:
        out.append(f"== {readable[k]}")
        if k not in fa or k not in fb:
            out.append(f"   only in {na if k in fa else nb} ({len(fa[k] if k in fa else fb[k])} instructions)")
            continue
        ia, ib = region(fa[k], bounds), region(fb[k], bounds)
        if ia is None or ib is None:
            missing = " and ".join(n for n, i in ((na, ia), (nb, ib)) if i is None)
            out.append(f"   no instruction matches --region's '{bounds[0].pattern}' in {missing}")
            continue
        if bounds is not None:
            out.append(f"   region: from '{bounds[0].pattern}'" +
                       (f" to '{bounds[1].pattern}'" if bounds[1] is not None else " to the end"))
        if count_ops:
            out.append(f"   count {na}: {counts(ia, count_ops)}")
            out.append(f"   count {nb}: {counts(ib, count_ops)}")
        changed = [line for line in difflib.unified_diff(ia, ib, lineterm="", n=0)
                   if line[:1] in "+-" and not line.startswith(("+++", "---"))]
        verdict = "same code" if not changed else f"{len(changed)} lines differ"
        out.append(f"   instructions: {na} {len(ia)}, {nb} {len(ib)} ({len(ib) - len(ia):+d}); {verdict}")
        ca, cb = collections.Counter(map(opcode, ia)), collections.Counter(map(opcode, ib))
        moved = sorted((op for op in set(ca) | set(cb) if ca[op] != cb[op]), key=lambda op: (-abs(cb[op] - ca[op]), op))
        if moved:
            width = max(len(op) for op in moved)
            out.append(f"   {'opcode':<{width}}  {na:>6}  {nb:>6}")
            for op in moved:
                out.append(f"   {op:<{width}}  {ca[op]:>6}  {cb[op]:>6}")
        if ops:
            for label, ins in ((na, ia), (nb, ib)):
                out.append(f"   order {label}: " + (", ".join(order(ins, ops, start, gap)) or "(none)"))
        if diff_lines and changed:
            body = list(difflib.unified_diff(ia, ib, na, nb, lineterm="", n=1))
            out += ["   " + line for line in body[:diff_lines]]
            if len(body) > diff_lines:
                out.append(f"   ... {len(body) - diff_lines} more lines")
    return out


def describe(fa, pattern=None, ops=None, start=None, gap=8, bounds=None, count_ops=None):
    """The report for the functions of one listing: instruction count, --count and --order, as lines."""
    keys, readable = selected(list(fa), pattern)
    if not keys:
        return ["no function" + (f" matches '{pattern.pattern}'" if pattern else " in the listing")]
    out = []
    for k in keys:
        out.append(f"== {readable[k]}")
        ins = region(fa[k], bounds)
        if ins is None:
            out.append(f"   no instruction matches --region's '{bounds[0].pattern}'")
            continue
        out.append(f"   instructions: {len(ins)}" + (f" (of {len(fa[k])})" if bounds is not None else ""))
        if count_ops:
            out.append(f"   count: {counts(ins, count_ops)}")
        if ops:
            out.append("   order: " + (", ".join(order(ins, ops, start, gap)) or "(none)"))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a", help="the first build: a cubin or nvdisasm -c text (the baseline)")
    ap.add_argument("b", nargs="?", help="the second build (left out: A's --order alone)")
    ap.add_argument("--function", help="only functions whose mangled or readable name matches this regex")
    ap.add_argument("--order", help="comma-separated opcodes whose program order to print (LDG,SYNCS,LDGSTS)")
    ap.add_argument("--gap", type=int, default=8, metavar="N",
                    help="in --order, mark N or more other instructions between two listed ones as (+N) (default 8)")
    ap.add_argument("--from", dest="start", help="start --order at the first instruction matching this regex")
    ap.add_argument("--region", metavar="FROM[,TO]",
                    help="only the part of each function from the first instruction matching FROM up to the next "
                         "matching TO (regexes; USETMAXREG.TRY_ALLOC,USETMAXREG.DEALLOC: the consumer branch)")
    ap.add_argument("--count", metavar="OPS", help="comma-separated opcodes whose counts to print in every build (R2UR,LDL)")
    ap.add_argument("--diff", type=int, default=0, metavar="N", help="print up to N lines of each changed function's diff")
    ap.add_argument("--ignore-registers", action="store_true",
                    help="compare with register numbers masked (a listing that only renamed registers is the same code)")
    ap.add_argument("--names", default="A,B", help="the two builds' labels in the report (default A,B)")
    args = ap.parse_args(argv)
    try:
        pattern = re.compile(args.function) if args.function else None
        start = re.compile(args.start) if args.start else None
    except re.error as e:
        print(f"sass_diff: error: --function / --from: bad regex ({e})", file=sys.stderr)
        return 2
    bounds = None
    if args.region is not None:
        parts = args.region.split(",")
        if len(parts) > 2 or not parts[0]:
            print(f"sass_diff: error: --region takes FROM or FROM,TO (two regexes); got '{args.region}'",
                  file=sys.stderr)
            return 2
        try:
            bounds = (re.compile(parts[0]), re.compile(parts[1]) if len(parts) == 2 and parts[1] else None)
        except re.error as e:
            print(f"sass_diff: error: --region: bad regex ({e})", file=sys.stderr)
            return 2
    count_ops = opcode_list(args.count) if args.count is not None else None
    if args.count is not None and not count_ops:
        print("sass_diff: error: --count names no opcode", file=sys.stderr)
        return 2
    if args.start and not args.order:
        print("sass_diff: error: --from needs --order (it says where the order listing starts)", file=sys.stderr)
        return 2
    if args.gap < 1:
        print(f"sass_diff: error: --gap must be >= 1; got {args.gap}", file=sys.stderr)
        return 2
    if args.diff < 0:
        print(f"sass_diff: error: --diff must be >= 0; got {args.diff}", file=sys.stderr)
        return 2
    names = args.names.split(",")
    if len(names) != 2 or not all(names):
        print(f"sass_diff: error: --names takes two labels, like old,new; got '{args.names}'", file=sys.stderr)
        return 2
    ops = set(opcode_list(args.order)) if args.order else None
    if args.order and not ops:
        print("sass_diff: error: --order names no opcode", file=sys.stderr)
        return 2
    if args.b is None:
        if not ops and not count_ops:
            print("sass_diff: error: with one listing, --order or --count is required (there is nothing to compare)",
                  file=sys.stderr)
            return 2
        if args.diff or args.names != "A,B":
            print("sass_diff: error: --diff and --names compare two listings; give B", file=sys.stderr)
            return 2
        try:
            fa = functions(read_listing(args.a), args.ignore_registers)
        except BadInput as e:
            print(f"sass_diff: error: {e}", file=sys.stderr)
            return 2
        if not fa:
            print("sass_diff: error: no function in the file (expected a cubin or `nvdisasm -c` text)",
                  file=sys.stderr)
            return 2
        print("\n".join(describe(fa, pattern, ops, start, args.gap, bounds, count_ops)))
        return 0
    try:
        a, b = read_listing(args.a), read_listing(args.b)
    except BadInput as e:
        print(f"sass_diff: error: {e}", file=sys.stderr)
        return 2
    fa, fb = functions(a, args.ignore_registers), functions(b, args.ignore_registers)
    if not fa and not fb:
        print("sass_diff: error: no function in either file (expected cubins or `nvdisasm -c` text)", file=sys.stderr)
        return 2
    print("\n".join(compare(fa, fb, pattern, ops, start, args.diff, tuple(names), args.gap, bounds, count_ops)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
