#!/usr/bin/env python3
"""Filters a build's output as it streams, and keeps all of it in a log file.

ptxas reports every kernel that spills (`ptxas warning : Registers are spilled ... '<mangled>'`).
The kernels allowed local memory are listed in scripts/sass_local_memory.txt (the allowances
`make scan-sass` enforces); their warnings are expected and become one line at the end. Any other
ptxas warning, a kernel that newly spills, is shown as it comes, with its readable name.

    cmake --build build 2>&1 | build_output.py --log build/build.log [--quiet] [--status RC]

--quiet: show only what needs reading (unexpected warnings, compiler warnings and errors, the
failing step's output); the progress lines stay in the log. --status RC: the build's exit status,
when known (a failed build's failing steps are shown from the log). Exit status: 0.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sass_listing  # noqa: E402  (demangled)
import sass_local_memory  # noqa: E402  (read_allowances)

ROOT = Path(__file__).resolve().parents[1]
_PTXAS = re.compile(r"^ptxas warning : (Local memory used for function|Registers are spilled to local memory"
                    r" in function) '(?P<name>[^']+)'")
_PROGRESS = re.compile(r"^\[(\d+/\d+| *\d+%)\] ")
_WARNING = re.compile(r"(^[^ ]+(:\d+:\d+: |\(\d+\): )(warning|error))|^FAILED: |error:|Error ")


def expected(name: str, allowances) -> bool:
    readable = sass_listing.demangled([name]).get(name, name)
    return any(regex.search(readable) for _, regex, _ in allowances)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log", required=True)
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--allow", default=str(ROOT / "scripts" / "sass_local_memory.txt"))
    args = ap.parse_args(argv[1:])
    try:
        allowances = sass_local_memory.read_allowances(args.allow)
    except (OSError, ValueError) as e:
        print(f"[build] cannot read the allowances ({e}); every ptxas warning is shown", file=sys.stderr)
        allowances = []
    Path(args.log).parent.mkdir(parents=True, exist_ok=True)
    quiet_expected, names = 0, set()
    failing = False
    with open(args.log, "w", encoding="utf-8") as log:
        for line in sys.stdin:
            log.write(line)
            log.flush()
            text = line.rstrip("\n")
            m = _PTXAS.match(text)
            if m:
                if expected(m.group("name"), allowances):
                    quiet_expected += 1
                    names.add(m.group("name"))
                    continue
                readable = sass_listing.demangled([m.group("name")]).get(m.group("name"))
                print(f"{text}\n  ({readable}: not allowed local memory in scripts/sass_local_memory.txt)",
                      flush=True)
                continue
            if args.quiet:
                if text.startswith("FAILED: "):
                    failing = True
                elif _PROGRESS.match(text):
                    failing = False
                if failing or _WARNING.search(text):
                    print(text, flush=True)
            else:
                print(text, flush=True)
    if quiet_expected:
        print(f"[build] ptxas: {quiet_expected} expected warnings for {len(names)} kernels that are allowed "
              f"local memory (scripts/sass_local_memory.txt); full log: {args.log}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
