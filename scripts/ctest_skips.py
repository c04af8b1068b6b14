#!/usr/bin/env python3
"""Summarizes the skipped tests of the last ctest run, one line per reason.

ctest lists skipped tests without saying why. The reason is in each test's output, which ctest
keeps in Testing/Temporary/LastTest.log: GoogleTest's GTEST_SKIP() prints
"<file>:<line>: Skipped" followed by the message, and a skipped script test prints a line
starting with "SKIPPED: ". This script groups the skipped tests by that message:

    ctest: 14 skipped
      11 x no CUDA device: TimerTest.CuptiSpanOfOneSpinKernel, ... (+8 more)
       3 x no CUDA device visible: DsaV1Tilings.EveryInstantiatedPathMatchesReference, ...

Usage: ctest_skips.py BUILD_DIR   (exit 0 always; prints nothing when nothing was skipped)
       ctest_skips.py --failures CTEST_OUTPUT   (the failed tests' output from a saved
                                                 `ctest --output-on-failure` run, and ctest's list)
"""

from __future__ import annotations

import re
import sys
from collections import OrderedDict
from pathlib import Path

_BLOCK_START = re.compile(r"^\d+/\d+ Testing: (?P<name>.+)$")
_GTEST_SKIP = re.compile(r":\d+: Skipped$")
_SCRIPT_SKIP = re.compile(r"^SKIPPED: (?P<reason>.+)$")


def skipped_tests(log_text: str) -> "OrderedDict[str, list[str]]":
    """Maps each skip reason to the tests skipped for it, in log order."""
    groups: "OrderedDict[str, list[str]]" = OrderedDict()
    name = None
    lines: list[str] = []

    def close_block() -> None:
        if name is None:
            return
        body = "\n".join(lines)
        if "Skip regular expression found in output" not in body and \
                "Test Skipped" not in body and "[  SKIPPED ]" not in body:
            return
        reason = None
        for i, line in enumerate(lines):
            if _GTEST_SKIP.search(line):
                nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
                reason = nxt if nxt and not nxt.startswith("[") else "GTEST_SKIP() without a message"
                break
            m = _SCRIPT_SKIP.match(line.strip())
            if m:
                reason = m.group("reason").strip()
                break
        if reason is None:
            if "Skip regular expression found in output" not in body and "Test Skipped" not in body:
                return  # a passing test that only mentions SKIPPED, not a skipped one
            reason = "skipped without a reason in its output"
        groups.setdefault(reason, []).append(name)

    for raw in log_text.splitlines():
        m = _BLOCK_START.match(raw)
        if m:
            close_block()
            # Parameterized GoogleTest names carry "  # GetParam() = ..." after the name.
            name, lines = m.group("name").split("  # ")[0].strip(), []
        elif name is not None:
            lines.append(raw)
    close_block()
    return groups


def format_summary(groups: "OrderedDict[str, list[str]]", shown: int = 3) -> str:
    total = sum(len(v) for v in groups.values())
    if total == 0:
        return ""
    out = [f"ctest: {total} skipped"]
    width = len(str(max(len(v) for v in groups.values())))
    for reason, names in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        listed = ", ".join(names[:shown])
        if len(names) > shown:
            listed += f", ... (+{len(names) - shown} more)"
        out.append(f"  {len(names):>{width}} x {reason}: {listed}")
    return "\n".join(out)


_RESULT = re.compile(r"^\s*\d+/\d+ Test\s+#\d+: ")
_FAILED = re.compile(r"\*\*\*(Failed|Exception|Timeout|Not Run)|\(Failed\)|\(Timeout\)")
_START = re.compile(r"^\s*Start\s+\d+: ")


def failures(output: str) -> str:
    """The result line and output of every failed test, then ctest's closing list of them."""
    out: list[str] = []
    keep = False
    for line in output.splitlines():
        if line.startswith("The following tests FAILED:") or re.match(r"^\d+% tests passed", line):
            keep = False
            if line.startswith("The following"):
                out.append(line)
                keep = True
            continue
        if _RESULT.match(line):
            keep = bool(_FAILED.search(line))
        elif _START.match(line):
            keep = False if not out or not out[-1].startswith("The following") else keep
        if keep:
            out.append(line)
    return "\n".join(out)


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[1] == "--failures":
        text = Path(argv[2]).read_text(encoding="utf-8", errors="replace")
        print(failures(text))
        return 0
    if len(argv) != 2:
        print("usage: ctest_skips.py BUILD_DIR | --failures CTEST_OUTPUT", file=sys.stderr)
        return 2
    log = Path(argv[1]) / "Testing" / "Temporary" / "LastTest.log"
    if not log.is_file():
        return 0
    summary = format_summary(skipped_tests(log.read_text(encoding="utf-8", errors="replace")))
    if summary:
        print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
