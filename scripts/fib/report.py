#!/usr/bin/env python3
"""Puts flashinfer-bench's verdict and latency beside `mlakit bench` on the same workloads.

    python3 scripts/fib/report.py --traceset DIR [--mlakit-bench DEF=FILE ...] [--out DIR]

Reads what the harness wrote into the trace set (traces/**/<definition>.jsonl: one trace per
workload and solution, with its status, max errors and latencies), the trace set's
mlakit-workloads.json (uuid -> workload name), and optionally the bench.jsonl that
`mlakit bench --trace DIR --definition DEF --out D` appended (workloads named trace-NN in file
order). Prints one table per definition and writes report.md and report.json to --out.
Exit status: 0 when every harness trace PASSED, 1 otherwise (2 for unusable input).

Standard library only (the traces are read as JSON, not through the harness's classes).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path


def _num(x):
    """Harness numbers may be serialized as strings ("Infinity", "NaN")."""
    if x is None:
        return None
    if isinstance(x, str):
        return float(x)
    return float(x)


def load_traces(traceset: Path) -> dict[str, list[dict]]:
    """Harness traces by definition (workload-only lines, without a solution, are left out)."""
    out: dict[str, list[dict]] = {}
    for path in sorted((traceset / "traces").rglob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            t = json.loads(line)
            if t.get("solution") is None or t.get("evaluation") is None:
                continue
            out.setdefault(t["definition"], []).append(t)
    return out


def load_bench(path: Path) -> dict[str, dict]:
    """`mlakit bench` records by workload name (trace-NN); the last record of a name wins."""
    records: dict[str, dict] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            records[r["workload"]] = r
    return records


def build_rows(definition: str, traces: list[dict], index: list[dict],
               bench: dict[str, dict] | None) -> list[dict]:
    """One row per (workload, solution) in the trace set's workload order."""
    order = [w for w in index if w["definition"] == definition]
    position = {w["uuid"]: i for i, w in enumerate(order)}
    width = 3 if len(order) > 100 else 2
    rows = []
    for t in traces:
        uid = t["workload"]["uuid"]
        i = position.get(uid)
        meta = order[i] if i is not None else {"name": uid[:8], "suite": "?", "valid_slots": None,
                                                "num_tokens": t["workload"]["axes"].get("num_tokens")}
        ev = t["evaluation"]
        corr = ev.get("correctness") or {}
        perf = ev.get("performance") or {}
        row = {
            "workload": meta["name"], "suite": meta["suite"], "uuid": uid,
            "T": meta.get("num_tokens"), "valid_slots": meta.get("valid_slots"),
            "solution": t["solution"], "status": ev["status"],
            "max_abs_err": _num(corr.get("max_absolute_error")),
            "max_rel_err": _num(corr.get("max_relative_error")),
            "latency_us": _num(perf.get("latency_ms")) * 1e3 if perf else None,
            "reference_us": _num(perf.get("reference_latency_ms")) * 1e3 if perf else None,
            "speedup": _num(perf.get("speedup_factor")),
            "hardware": (ev.get("environment") or {}).get("hardware"),
            "libs": (ev.get("environment") or {}).get("libs", {}),
            "position": i if i is not None else len(order),
        }
        if bench is not None and i is not None:
            r = bench.get(f"trace-{i:0{width}d}")
            if r is not None:
                row.update({"mlakit_span_us": r.get("median_us"), "mlakit_mean_us": r.get("mean_us"),
                            "mlakit_host_us": r.get("host_us"), "mlakit_verified": r.get("verified"),
                            "mlakit_method": r.get("method"), "mlakit_kernel": r.get("kernel"),
                            "mlakit_tiling": r.get("tiling")})
        rows.append(row)
    rows.sort(key=lambda r: (r["position"], r["solution"]))
    return rows


def _fmt(x, spec):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return format(x, spec)


def summarize(rows: list[dict]) -> dict:
    passed = sum(r["status"] == "PASSED" for r in rows)
    summary = {"traces": len(rows), "passed": passed,
               "max_abs_err": max((r["max_abs_err"] for r in rows if r["max_abs_err"] is not None),
                                  default=None)}
    for suite in sorted({r["suite"] for r in rows}):
        sub = [r for r in rows if r["suite"] == suite]
        lat = [r["latency_us"] for r in sub if r["latency_us"] is not None]
        span = [r["mlakit_span_us"] for r in sub if r.get("mlakit_span_us") is not None]
        summary[suite] = {
            "workloads": len(sub),
            "harness_mean_latency_us": statistics.mean(lat) if lat else None,
            "mlakit_mean_span_us": statistics.mean(span) if span else None,
        }
    return summary


def render(definition: str, rows: list[dict], harness_version: str | None) -> str:
    """A Markdown section: the verdict, the per-workload table, the suite means."""
    s = summarize(rows)
    hardware = next((r["hardware"] for r in rows if r["hardware"]), "?")
    libs = next((r["libs"] for r in rows if r["libs"]), {})
    solutions = sorted({r["solution"] for r in rows})
    lines = [f"### {definition}", ""]
    lines.append(f"flashinfer-bench {harness_version or '?'} on {hardware} "
                 f"({', '.join(f'{k} {v}' for k, v in sorted(libs.items()))}); "
                 f"solution {', '.join(solutions)}")
    verdict = "PASSED" if s["passed"] == s["traces"] and s["traces"] else "NOT PASSED"
    lines.append(f"harness verdict: **{verdict}**, {s['passed']}/{s['traces']} workloads PASSED "
                 f"(max abs error {_fmt(s['max_abs_err'], '.3g')})")
    lines.append("")
    lines.append("| workload | T | valid slots | harness status | max abs err | max rel err | "
                 "harness latency (us) | harness reference (us) | mlakit bench span (us) | "
                 "mlakit host (us) | mlakit verify |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        verified = r.get("mlakit_verified")
        lines.append(
            f"| {r['workload']} | {_fmt(r['T'], 'd')} | {_fmt(r['valid_slots'], 'd')} | {r['status']} | "
            f"{_fmt(r['max_abs_err'], '.2e')} | {_fmt(r['max_rel_err'], '.2e')} | "
            f"{_fmt(r['latency_us'], '.1f')} | {_fmt(r['reference_us'], '.0f')} | "
            f"{_fmt(r.get('mlakit_span_us'), '.2f')} | {_fmt(r.get('mlakit_host_us'), '.2f')} | "
            f"{'-' if verified is None else ('ok' if verified else 'FAIL')} |")
    lines.append("")
    for suite in sorted(k for k in s if k.startswith("dsa-")):
        m = s[suite]
        lines.append(f"- {suite}, {m['workloads']} workloads: harness mean latency "
                     f"{_fmt(m['harness_mean_latency_us'], '.2f')} us; mlakit bench mean span "
                     f"{_fmt(m['mlakit_mean_span_us'], '.2f')} us")
    lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="report.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--traceset", required=True, type=Path)
    parser.add_argument("--mlakit-bench", nargs="*", default=[], metavar="DEFINITION=FILE",
                        help="bench.jsonl of `mlakit bench --trace` per definition")
    parser.add_argument("--harness-version", default=None)
    parser.add_argument("--out", type=Path, default=None, help="folder for report.md / report.json")
    args = parser.parse_args(argv)

    index_path = args.traceset / "mlakit-workloads.json"
    if not index_path.is_file():
        print(f"report: {index_path} not found (write the trace set with scripts/fib/traceset.py)",
              file=sys.stderr)
        return 2
    index = json.loads(index_path.read_text(encoding="utf-8"))["workloads"]
    benches: dict[str, dict[str, dict]] = {}
    for item in args.mlakit_bench:
        definition, _, file = item.partition("=")
        if not file:
            parser.error(f"--mlakit-bench: expected DEFINITION=FILE, got {item!r}")
        if Path(file).is_file():
            benches[definition] = load_bench(Path(file))

    traces = load_traces(args.traceset)
    if not traces:
        print(f"report: no harness traces under {args.traceset / 'traces'} (did the run fail?)",
              file=sys.stderr)
        return 1
    sections, doc, all_passed = [], {}, True
    for definition in sorted(traces):
        rows = build_rows(definition, traces[definition], index, benches.get(definition))
        sections.append(render(definition, rows, args.harness_version))
        doc[definition] = {"summary": summarize(rows), "rows": rows}
        all_passed &= all(r["status"] == "PASSED" for r in rows)
    text = "\n".join(sections)
    print(text)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "report.md").write_text(text, encoding="utf-8")
        (args.out / "report.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return 0 if all_passed else 1


if __name__ == "__main__":
    sys.exit(main())
