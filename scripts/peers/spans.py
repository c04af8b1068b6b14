"""GPU spans of one call each, from CUPTI's kernel records as PyTorch's profiler (kineto) exports them.

The figure is the one `mlakit bench` reports (docs/workbench.md): from the first kernel's start to
the last kernel's end of one call, gaps between its kernels included, host time excluded. Each
timed call is preceded by an L2 flush kernel whose name contains FLUSH_MARK and then by a
busy-wait kernel (BUSY_MARK: PyTorch's torch.cuda._sleep) that keeps the GPU occupied while the
host enqueues the call, so that a slow launch path (Triton's Python launcher: ~20 us a kernel)
does not open gaps between the call's kernels that the GPU would wait in
(docs/knowledge/timing.md). The kernels between two flushes, less the
busy-wait, are one call's.

Standard library only (the grouping is tested without a GPU: tests/python/test_peer_bench.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

FLUSH_MARK = "mlakit_peer_l2_flush"
BUSY_MARK = "spin_kernel"


@dataclass(frozen=True)
class Kernel:
    name: str
    start_us: float
    end_us: float


def kernels_of_trace(trace: dict) -> list[Kernel]:
    """The device kernels of a Chrome trace (profiler.export_chrome_trace), in start order."""
    out = []
    for e in trace.get("traceEvents", []):
        if e.get("ph") == "X" and e.get("cat") == "kernel":
            start = float(e["ts"])
            out.append(Kernel(str(e.get("name", "")), start, start + float(e.get("dur", 0.0))))
    out.sort(key=lambda k: (k.start_us, k.end_us))
    return out


def kernels_of_file(path: str | Path) -> list[Kernel]:
    return kernels_of_trace(json.loads(Path(path).read_text(encoding="utf-8")))


def call_spans(kernels: list[Kernel], calls: int) -> list[float]:
    """The span (us) of each call: the kernels after each flush up to the next one.

    Raises ValueError when the trace does not hold `calls` flushes each followed by at least one
    kernel (a call that launched nothing, or records lost), so a broken trace never yields a figure.
    """
    groups: list[list[Kernel]] = []
    for k in kernels:
        if FLUSH_MARK in k.name:
            groups.append([])
        elif BUSY_MARK in k.name:
            continue
        elif groups:
            groups[-1].append(k)
    if len(groups) != calls:
        raise ValueError(f"expected {calls} flushes in the trace, found {len(groups)}")
    empty = [i for i, g in enumerate(groups) if not g]
    if empty:
        raise ValueError(f"call {empty[0]} of {calls} has no kernel after its flush")
    return [max(k.end_us for k in g) - min(k.start_us for k in g) for g in groups]


def check_busy_waits(kernels: list[Kernel], calls: int) -> None:
    """Raises ValueError unless the trace holds one busy-wait per call: a busy-wait not recognised by
    BUSY_MARK would otherwise be counted in a call's span."""
    n = sum(1 for k in kernels if BUSY_MARK in k.name)
    if n != calls:
        raise ValueError(f"expected {calls} busy-wait kernels ({BUSY_MARK!r}) in the trace, found {n}")
