"""The one-command harness run (scripts/run_flashinfer_bench.sh) where it cannot run, and its
report (scripts/fib/report.py) on traces written in the harness's format."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "fib"))

import report  # noqa: E402
import traceset  # noqa: E402

PS64 = traceset.DEFINITIONS["ps64"][0]
SCRIPT = ROOT / "scripts" / "run_flashinfer_bench.sh"


def run_script(*args, env_extra=None):
    env = dict(os.environ)
    env["CUDA_VISIBLE_DEVICES"] = ""  # no GPU for PyTorch, whatever the machine has
    env.update(env_extra or {})
    return subprocess.run(["bash", str(SCRIPT), *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)


def test_without_a_gpu_it_skips_with_the_reason_before_building_anything(tmp_path):
    build = tmp_path / "build"
    r = run_script("--build", str(build), "--out", str(tmp_path / "out"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[flashinfer-bench] skipped: " in r.stdout
    assert ("no CUDA device visible to PyTorch" in r.stdout
            or "PyTorch is not importable" in r.stdout)
    assert "make flashinfer-bench" in r.stdout
    assert not build.exists() and not (tmp_path / "out").exists()


def test_check_mode_skips_the_same_way_and_bad_arguments_exit_2():
    r = run_script("--check")
    assert r.returncode == 0 and "skipped: " in r.stdout
    r = run_script("--definitions", "ps2")
    assert r.returncode == 2 and "expected ps64 and/or ps1, got 'ps2'" in r.stderr
    r = run_script("--frobnicate")
    assert r.returncode == 2 and "unknown argument '--frobnicate'" in r.stderr


def harness_trace(uuid, status="PASSED", latency_ms=0.0153, abs_err=0.0117):
    """One trace as flashinfer-bench 0.1.2 serializes it (Trace.model_dump_json)."""
    evaluation = {
        "status": status,
        "environment": {"hardware": "NVIDIA H200", "libs": {"torch": "2.11.0+cu130", "cuda": "13.0"}},
        "timestamp": "2026-11-23T12:00:00",
        "log": "",
        "correctness": {"max_relative_error": 0.5, "max_absolute_error": abs_err, "extra": None},
        "performance": {"latency_ms": latency_ms, "reference_latency_ms": 1.2,
                        "speedup_factor": 1.2 / latency_ms},
    }
    if status == "INCORRECT_NUMERICAL":
        evaluation["performance"] = None
    if status == "RUNTIME_ERROR":
        evaluation["correctness"] = evaluation["performance"] = None
    return {"definition": PS64, "workload": {"axes": {"num_tokens": 1, "num_pages": 8462},
                                             "inputs": {}, "uuid": uuid},
            "solution": "mlakit_0_1_0_dps_ps64", "evaluation": evaluation}


def write_traces(ts, traces):
    path = ts / "traces" / "dsa_paged" / f"{PS64}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(json.dumps(t) for t in traces) + "\n")


def test_report_puts_the_verdict_beside_mlakit_bench(tmp_path, capsys):
    ts = tmp_path / "ts"
    index = traceset.write_traceset(ts, ["ps64"], ["contest"], seed=1)
    uuids = [w["uuid"] for w in index["workloads"]]
    # Written in another order than the trace set's: the report follows the trace set.
    write_traces(ts, [harness_trace(u, latency_ms=0.0150 + i * 1e-4)
                      for i, u in reversed(list(enumerate(uuids)))])
    bench = tmp_path / "bench.jsonl"
    bench.write_text("\n".join(json.dumps({"workload": f"trace-{i:02d}", "median_us": 10.0 + i,
                                           "mean_us": 10.5 + i, "host_us": 5.0, "verified": True,
                                           "method": "cupti", "kernel": "k", "tiling": "t"})
                               for i in range(len(uuids))) + "\n")
    rc = report.main(["--traceset", str(ts), "--mlakit-bench", f"{PS64}={bench}",
                      "--harness-version", "0.1.2", "--out", str(tmp_path / "out")])
    text = capsys.readouterr().out
    assert rc == 0
    assert "flashinfer-bench 0.1.2 on NVIDIA H200" in text
    assert "harness verdict: **PASSED**, 23/23 workloads PASSED" in text
    rows = [line for line in text.splitlines() if line.startswith("| contest-")]
    assert len(rows) == 23 and rows[0].startswith("| contest-00 | 1 | 2 | PASSED |")
    assert "| 15.0 |" in rows[0] and "| 10.00 | 5.00 | ok |" in rows[0]
    assert "dsa-contest, 23 workloads: harness mean latency 16.10 us; mlakit bench mean span 21.00 us" in text
    doc = json.loads((tmp_path / "out" / "report.json").read_text())
    assert doc[PS64]["summary"]["passed"] == 23
    assert (tmp_path / "out" / "report.md").read_text().strip() == text.strip()


def test_report_fails_when_a_workload_did_not_pass(tmp_path, capsys):
    ts = tmp_path / "ts"
    index = traceset.write_traceset(ts, ["ps64"], ["contest"], seed=1)
    uuids = [w["uuid"] for w in index["workloads"]]
    traces = [harness_trace(u) for u in uuids]
    traces[3] = harness_trace(uuids[3], status="INCORRECT_NUMERICAL", abs_err=0.5)
    traces[4] = harness_trace(uuids[4], status="RUNTIME_ERROR")
    write_traces(ts, traces)
    assert report.main(["--traceset", str(ts)]) == 1
    text = capsys.readouterr().out
    assert "harness verdict: **NOT PASSED**, 21/23 workloads PASSED" in text
    assert "| contest-03 | 2 | 72 | INCORRECT_NUMERICAL | 5.00e-01 |" in text
    assert "| contest-04 | 2 | 343 | RUNTIME_ERROR | - |" in text


def test_report_without_traces_or_index_says_so(tmp_path, capsys):
    assert report.main(["--traceset", str(tmp_path)]) == 2
    assert "mlakit-workloads.json not found" in capsys.readouterr().err
    traceset.write_traceset(tmp_path, ["ps64"], ["serving"], seed=1)
    assert report.main(["--traceset", str(tmp_path)]) == 1
    assert "no harness traces" in capsys.readouterr().err


def test_harness_numbers_serialized_as_strings_are_read():
    assert report._num("Infinity") == float("inf")
    assert report._num(1) == 1.0 and report._num(None) is None


@pytest.mark.parametrize("target", ["flashinfer-bench", "fib-wheels"])
def test_make_targets_exist(target):
    r = subprocess.run(["make", "-n", target], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
