#!/usr/bin/env python3
"""The local-memory check of `make scan-sass`: every kernel's LDL / STL instructions (spills, or an
array indexed at run time) counted in the SASS and held to the allowance of
scripts/sass_local_memory.txt. A kernel not listed there must have none: a change that puts a
kernel's registers or arrays in local memory fails here, before a GPU run shows it as time (devlog
step 43: a row loop not unrolled put the producer's four slots in local memory).

Usage:
  python3 scripts/sass_local_memory.py ALLOWANCES LISTING [LISTING ...]

LISTING: the text of `nvdisasm -c` (scan_sass.sh writes one per translation unit). ALLOWANCES:
lines of `MAX REGEX`, REGEX matched (re.search) against the demangled kernel name, the first
matching line counting; '#' starts a comment. Prints one line per kernel with local memory and
"[scan-sass] local memory: within the allowances", or the kernels over theirs and the allowances
no kernel uses any more (exit 1). Lower a number when a change removes spills, remove the line when
they are gone; raise one only with the measurement that says the spill costs less than what it
bought.
"""
import collections
import re
import sys

import sass_listing


def read_allowances(path):
    """[(max, compiled regex, line number)] in file order."""
    out = []
    with open(path) as f:
        for no, line in enumerate(f, 1):
            text = line.split("#", 1)[0].strip()
            if not text:
                continue
            count, _, pattern = text.partition(" ")
            if not count.isdigit() or not pattern.strip():
                raise ValueError(f"{path}:{no}: expected 'MAX REGEX'; got '{text}'")
            try:
                out.append((int(count), re.compile(pattern.strip()), no))
            except re.error as e:
                raise ValueError(f"{path}:{no}: bad regex ({e})") from None
    return out


def local_counts(listing):
    """{mangled kernel name: LDL + STL instructions} for the functions of one listing that have any."""
    counts = {}
    for name, body in sass_listing.functions(listing).items():
        c = collections.Counter(map(sass_listing.opcode, body))
        if c["LDL"] + c["STL"]:
            counts[name] = c["LDL"] + c["STL"]
    return counts


def check(allowances, counts, readable):
    """(report lines, findings) for {mangled: count} against the allowances. An allowance that no
    kernel with local memory uses is a finding too: the spill it allowed is gone, so is the line."""
    lines, findings = [], []
    used = set()
    for name in sorted(counts, key=lambda n: readable[n]):
        n, who = counts[name], readable[name]
        allowed = next(((m, no) for m, rx, no in allowances if rx.search(who)), None)
        if allowed is not None:
            used.add(allowed[1])
        if allowed is None:
            findings.append(f"[scan-sass] local memory in {who}: {n} LDL / STL, none allowed (not in the allowances)")
        elif n > allowed[0]:
            findings.append(f"[scan-sass] local memory in {who}: {n} LDL / STL, more than the {allowed[0]} of allowance line {allowed[1]}")
        else:
            lines.append(f"[scan-sass] local memory ok: {who[:120]}: {n} LDL / STL (allowed {allowed[0]})")
    for m, rx, no in allowances:
        if no not in used:
            findings.append(f"[scan-sass] local memory: allowance line {no} ({m} for '{rx.pattern}') matches no kernel "
                            "with local memory; remove it")
    return lines, findings


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2:
        print("usage: sass_local_memory.py ALLOWANCES LISTING [LISTING ...]", file=sys.stderr)
        return 2
    try:
        allowances = read_allowances(argv[0])
    except (OSError, ValueError) as e:
        print(f"sass_local_memory: error: ALLOWANCES: {e}", file=sys.stderr)
        return 2
    counts = {}
    for path in argv[1:]:
        try:
            counts.update(local_counts(open(path).read()))
        except OSError as e:
            print(f"sass_local_memory: error: LISTING: {e}", file=sys.stderr)
            return 2
    readable = sass_listing.demangled(list(counts))
    if any(readable[n] == n for n in counts if n.startswith("_Z")):
        print("[scan-sass] local memory: c++filt not found, kernel names left mangled (the allowances match"
              " demangled names)", file=sys.stderr)
    lines, findings = check(allowances, counts, readable)
    print("\n".join(lines + findings) if lines or findings else "[scan-sass] local memory: none in any kernel")
    if findings:
        return 1
    print("[scan-sass] local memory: within the allowances")
    return 0


if __name__ == "__main__":
    sys.exit(main())
