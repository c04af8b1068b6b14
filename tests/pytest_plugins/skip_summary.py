"""pytest plugin: after the run, one line per skip reason (like scripts/ctest_skips.py for ctest).

    pytest: 96 skipped
      93 x PyTorch is not installed: python/tests/test_contract.py::test_x[...], ... (+90 more)
       2 x no CUDA device (the kernels need an sm_90 GPU): python/tests/test_gpu.py::test_y, ...

Loaded by scripts/test_python.sh with `-p skip_summary` (this folder on PYTHONPATH).
"""

from collections import OrderedDict

_SHOWN = 3


def skip_reason(report) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        reason = str(longrepr[2])
    else:
        reason = str(longrepr)
    return reason[len("Skipped: "):] if reason.startswith("Skipped: ") else reason


def group_skips(reports) -> "OrderedDict[str, list[str]]":
    groups: "OrderedDict[str, list[str]]" = OrderedDict()
    for report in reports:
        groups.setdefault(skip_reason(report), []).append(report.nodeid)
    return groups


def summary_lines(groups) -> list:
    total = sum(len(v) for v in groups.values())
    if total == 0:
        return []
    width = len(str(max(len(v) for v in groups.values())))
    lines = [f"pytest: {total} skipped"]
    for reason, ids in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        listed = ", ".join(ids[:_SHOWN])
        if len(ids) > _SHOWN:
            listed += f", ... (+{len(ids) - _SHOWN} more)"
        lines.append(f"  {len(ids):>{width}} x {reason}: {listed}")
    return lines


def pytest_terminal_summary(terminalreporter):
    for line in summary_lines(group_skips(terminalreporter.stats.get("skipped", []))):
        terminalreporter.write_line(line)
