"""lab/scripts/ab_bench.py: alternating passes of several mlakit builds, spans read from bench.jsonl.

The builds here are stand-ins: a small Python program per build that answers `bench ... --out DIR`
by appending records to DIR/bench.jsonl (spans fixed per build and pass), and logs its calls."""

import json
import os
import stat
import sys

import pytest

import ab_bench

FAKE = r'''#!{python}
import json, os, sys
args = sys.argv[1:]
log = {log!r}
with open(log, "a") as f:
    f.write({name!r} + " " + " ".join(args) + "\n")
if {exit_code}:
    print("mlakit: error: the fake build fails")
    sys.exit({exit_code})
out = args[args.index("--out") + 1]
calls = sum(1 for line in open(log) if line.startswith({name!r} + " "))
spans = {spans!r}
with open(os.path.join(out, "bench.jsonl"), "a") as f:
    for i, w in enumerate({workloads!r}):
        f.write(json.dumps(dict(workload=w, median_us=spans[i] + 0.5 * (calls - 1), device="NVIDIA H200",
                                sm_clock_mhz=1980, throttle="none", method={method!r}, suite="suite dsa-serving",
                                kernel="dsa_decode.v2_fused.bf16", tiling="s8n64x4m1p4g2w1h64",
                                verified={verified!r})) + "\n")
'''


def fake_build(tmp_path, name, spans, workloads=("serving-T16", "serving-T32"), exit_code=0,
               method="CUPTI span, cold L2", verified=None):
    path = tmp_path / f"fake-{name}"
    path.write_text(FAKE.format(python=sys.executable, log=str(tmp_path / "calls.log"), name=name, exit_code=exit_code,
                                spans=list(spans), workloads=list(workloads), method=method, verified=verified))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return f"{name}={path}"


def calls(tmp_path):
    return [line.split() for line in (tmp_path / "calls.log").read_text().splitlines()]


def test_alternating_passes_and_the_ratio_to_the_baseline(tmp_path, capsys):
    a = fake_build(tmp_path, "base", [20.0, 40.0])
    b = fake_build(tmp_path, "new", [10.0, 30.0])
    assert ab_bench.main([a, b, "--suite", "dsa-serving", "--heads", "128", "--passes", "3"]) == 0
    order = [c[0] for c in calls(tmp_path)]
    assert order == ["base", "new", "new", "base", "base", "new"]  # each pass starts with the next build
    first = calls(tmp_path)[0]
    assert first[1] == "bench" and first[first.index("--suite") + 1] == "dsa-serving"
    assert first[first.index("--heads") + 1] == "128"
    assert "--no-verify" in first and "--no-floor" in first and "--quiet" in first
    out = capsys.readouterr().out
    # A build's n-th run adds 0.5 us: base 20 / 20.5 / 21 (mean 20.5), new 10 / 10.5 / 11 (mean 10.5).
    assert "| serving-T16 | 20.00 / 20.50 / 21.00 | 10.00 / 10.50 / 11.00 | 0.512 |" in out
    assert "| serving-T32 | 40.00 / 40.50 / 41.00 | 30.00 / 30.50 / 31.00 | 0.753 |" in out
    assert "| mean | 30.50 | 20.50 | 0.672 |" in out
    assert "NVIDIA H200" in out and "CUPTI span, cold L2" in out
    assert "suite dsa-serving, kernel" in out  # the records' title ("suite NAME") named once
    # How far the passes lie apart: base 1 / 20.5 and 1 / 40.5, new 1 / 10.5 and 1 / 30.5.
    assert ("pass to pass, (max - min) / mean of a workload's spans: base median 3.7 %, largest 4.9 % "
            "(serving-T16), suite mean per pass 30.00 / 30.50 / 31.00; new median 6.4 %, largest 9.5 % "
            "(serving-T16), suite mean per pass 20.00 / 20.50 / 21.00") in out


def test_one_pass_prints_no_spread(tmp_path, capsys):
    a = fake_build(tmp_path, "a", [1.0, 2.0])
    b = fake_build(tmp_path, "b", [1.0, 2.0])
    assert ab_bench.main([a, b, "--suite", "dsa-serving", "--passes", "1"]) == 0
    assert "pass to pass" not in capsys.readouterr().out


def test_arguments_after_the_separator_reach_every_run(tmp_path):
    a = fake_build(tmp_path, "a", [1.0, 2.0])
    b = fake_build(tmp_path, "b", [1.0, 2.0])
    assert ab_bench.main([a, b, "--suite", "dsa-serving", "--passes", "1", "--", "--warmup", "5"]) == 0
    for c in calls(tmp_path):
        assert c[-2:] == ["--warmup", "5"]
        assert "--heads" not in c


def test_a_failing_build_is_named_with_its_pass(tmp_path, capsys):
    a = fake_build(tmp_path, "base", [1.0, 2.0])
    b = fake_build(tmp_path, "broken", [1.0, 2.0], exit_code=3)
    assert ab_bench.main([a, b, "--suite", "dsa-serving"]) == 1
    err = capsys.readouterr().err
    assert "broken, pass 1" in err and "exited 3" in err and "the fake build fails" in err


def test_a_workload_missing_from_a_run_fails(tmp_path, capsys):
    a = fake_build(tmp_path, "base", [1.0, 2.0])
    b = fake_build(tmp_path, "short", [1.0], workloads=("serving-T16",))
    assert ab_bench.main([a, b, "--suite", "dsa-serving"]) == 1
    assert "short, pass 1: no record of serving-T32" in capsys.readouterr().err


def test_spans_measured_different_ways_are_not_compared(tmp_path, capsys):
    a = fake_build(tmp_path, "base", [1.0, 2.0])
    b = fake_build(tmp_path, "events", [1.0, 2.0], method="CUDA events")
    assert ab_bench.main([a, b, "--suite", "dsa-serving"]) == 1
    assert "measured different ways" in capsys.readouterr().err


def test_verify_asks_every_run_to_verify_and_checks_it(tmp_path, capsys):
    a = fake_build(tmp_path, "base", [1.0, 2.0], verified=True)
    b = fake_build(tmp_path, "wrong", [1.0, 2.0], verified=False)
    assert ab_bench.main([a, b, "--suite", "dsa-serving", "--verify"]) == 1
    assert "wrong, pass 1: not verified: serving-T16, serving-T32" in capsys.readouterr().err
    assert all("--no-verify" not in c for c in calls(tmp_path))


def test_a_build_may_name_its_own_tiling(tmp_path, capsys):
    """NAME=PATH@TILING: one binary against itself with another tiling, row by row."""
    a = fake_build(tmp_path, "x", [1.0, 2.0])
    path = a.split("=", 1)[1]
    assert ab_bench.main([f"default={path}", f"h64={path}@s8n64x4m1p4g3w1h64", "--suite", "dsa-contest",
                          "--tiling", "s16n64x8m1p4g1", "--passes", "1"]) == 0
    first, second = calls(tmp_path)
    assert first[first.index("--tiling") + 1] == "s16n64x8m1p4g1"  # --tiling where a build names none
    assert second[second.index("--tiling") + 1] == "s8n64x4m1p4g3w1h64"
    assert "| workload | default | h64 | h64 / default |" in capsys.readouterr().out


def test_records_stay_in_the_out_folder(tmp_path):
    a = fake_build(tmp_path, "a", [1.0, 2.0])
    b = fake_build(tmp_path, "b", [3.0, 4.0])
    out = tmp_path / "records"
    assert ab_bench.main([a, b, "--suite", "dsa-serving", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["pass1-a", "pass1-b", "pass2-a", "pass2-b"]
    rows = [json.loads(line) for line in (out / "pass2-b" / "bench.jsonl").read_text().splitlines()]
    assert [r["median_us"] for r in rows] == [3.5, 4.5]


@pytest.mark.parametrize("args, message", [
    (["base", "new=x"], "build 'base': expected NAME=PATH"),
    (["a=/nonexistent/mlakit", "b=/nonexistent/mlakit"], "is not an executable file"),
    (["only={exe}"], "give at least two NAME=PATH"),
    (["a={exe}", "a={exe}"], "the name 'a' is given twice"),
    (["a b={exe}", "c={exe}"], "NAME may hold letters, digits"),
    (["a={exe}", "b={exe}", "--passes", "0"], "--passes 0"),
    (["a={exe}", "b={exe}", "--heads", "-1"], "--heads -1"),
    (["a={exe}", "b={exe}", "--out", "{tmp}"], "exists"),
    (["a={exe}", "b={exe}@"], "TILING after '@' must be a tiling name"),
    (["a={exe}", "b={exe}@s8 n64"], "TILING after '@' must be a tiling name"),
])
def test_bad_arguments_name_the_argument(tmp_path, capsys, args, message):
    exe = fake_build(tmp_path, "x", [1.0]).split("=", 1)[1]
    args = [a.format(exe=exe, tmp=tmp_path) for a in args]
    assert ab_bench.main(args + ["--suite", "dsa-serving"]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "calls.log").exists()  # nothing ran


def test_a_build_that_writes_no_records_fails_plainly(tmp_path, capsys):
    quiet = tmp_path / "quiet"
    quiet.write_text(f"#!{sys.executable}\nimport sys\nsys.exit(0)\n")
    quiet.chmod(quiet.stat().st_mode | stat.S_IXUSR)
    b = fake_build(tmp_path, "b", [1.0, 2.0])
    assert ab_bench.main([f"quiet={quiet}", b, "--suite", "dsa-serving"]) == 1
    assert "bench.jsonl was not written" in capsys.readouterr().err
