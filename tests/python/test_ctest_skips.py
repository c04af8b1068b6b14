"""scripts/ctest_skips.py: skipped ctest cases grouped by the reason their output gives."""

import ctest_skips

LOG = """\
Start testing: Nov 23 10:39 UTC
----------------------------------------------------------
1/4 Testing: PlanTest.Valid
1/4 Test: PlanTest.Valid
Output:
----------------------------------------------------------
[ RUN      ] PlanTest.Valid
[       OK ] PlanTest.Valid (0 ms)
<end of output>
Test time =   0.00 sec
----------------------------------------------------------
Test Passed.
2/4 Testing: TimerTest.CuptiSpan
2/4 Test: TimerTest.CuptiSpan
Output:
----------------------------------------------------------
[ RUN      ] TimerTest.CuptiSpan
/src/tests/gpu/test_timer.cpp:72: Skipped
no CUDA device
[  SKIPPED ] TimerTest.CuptiSpan (0 ms)
<end of output>
Test time =   0.00 sec
----------------------------------------------------------
Test Pass Reason:
Skip regular expression found in output. Regex=[\\[  SKIPPED \\]]
3/4 Testing: AllKernels/DsaSuiteTest.Matches/dsa_contest  # GetParam() = dsa-contest
3/4 Test: AllKernels/DsaSuiteTest.Matches/dsa_contest  # GetParam() = dsa-contest
Output:
----------------------------------------------------------
/src/tests/gpu/test_dsa_kernels.cpp:99: Skipped
no CUDA device
[  SKIPPED ] AllKernels/DsaSuiteTest.Matches/dsa_contest (0 ms)
<end of output>
Test Pass Reason:
Skip regular expression found in output. Regex=[\\[  SKIPPED \\]]
4/4 Testing: third_party_headers
4/4 Test: third_party_headers
Output:
----------------------------------------------------------
SKIPPED: CLI11 missing in .deps/ (run 'make deps')
<end of output>
Test Pass Reason:
Skip regular expression found in output. Regex=[SKIPPED: ]
End testing: Nov 23 10:39 UTC
"""


def test_groups_skipped_tests_by_reason_and_ignores_passing_ones():
    groups = ctest_skips.skipped_tests(LOG)
    assert dict(groups) == {
        "no CUDA device": ["TimerTest.CuptiSpan", "AllKernels/DsaSuiteTest.Matches/dsa_contest"],
        "CLI11 missing in .deps/ (run 'make deps')": ["third_party_headers"],
    }


def test_summary_has_one_line_per_reason_largest_first():
    text = ctest_skips.format_summary(ctest_skips.skipped_tests(LOG))
    lines = text.splitlines()
    assert lines[0] == "ctest: 3 skipped"
    assert lines[1].startswith("  2 x no CUDA device: TimerTest.CuptiSpan, AllKernels/")
    assert lines[2].startswith("  1 x CLI11 missing in .deps/")
    assert len(lines) == 3


def test_nothing_skipped_prints_nothing(tmp_path, capsys):
    (tmp_path / "Testing" / "Temporary").mkdir(parents=True)
    (tmp_path / "Testing" / "Temporary" / "LastTest.log").write_text(LOG.split("2/4 Testing")[0])
    assert ctest_skips.main(["ctest_skips.py", str(tmp_path)]) == 0
    assert capsys.readouterr().out == ""


def test_long_groups_are_abbreviated():
    groups = {"no CUDA device": [f"T.{i}" for i in range(10)]}
    text = ctest_skips.format_summary(groups)
    assert "T.0, T.1, T.2, ... (+7 more)" in text


def test_pytest_skips_are_grouped_by_reason_too():
    import sys
    from pathlib import Path
    from types import SimpleNamespace

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pytest_plugins"))
    import skip_summary

    reports = [SimpleNamespace(nodeid=f"t.py::a{i}", longrepr=("t.py", 3, "Skipped: no torch"))
               for i in range(5)]
    reports.append(SimpleNamespace(nodeid="g.py::b", longrepr=("g.py", 9, "Skipped: no GPU")))
    lines = skip_summary.summary_lines(skip_summary.group_skips(reports))
    assert lines == ["pytest: 6 skipped",
                     "  5 x no torch: t.py::a0, t.py::a1, t.py::a2, ... (+2 more)",
                     "  1 x no GPU: g.py::b"]
    assert skip_summary.summary_lines(skip_summary.group_skips([])) == []


CTEST_OUTPUT = """\
Test project /b
    Start 1: PlanTest.Valid
    Start 2: CliTest.Repeated
1/3 Test #1: PlanTest.Valid ...................   Passed    0.01 sec
2/3 Test #2: CliTest.Repeated .................***Failed    0.02 sec
[ RUN      ] CliTest.Repeated
/src/tests/cpu/test_cli.cpp:10: Failure
Expected equality of these values: 2 vs 0
[  FAILED  ] CliTest.Repeated (2 ms)
    Start 3: TimerTest.Cupti
3/3 Test #3: TimerTest.Cupti ..................   Passed    0.00 sec

67% tests passed, 1 tests failed out of 3

Total Test time (real) =   0.10 sec

The following tests FAILED:
\t  2 - CliTest.Repeated (Failed)
Errors while running CTest
"""


def test_failures_show_the_failed_test_output_and_the_list():
    text = ctest_skips.failures(CTEST_OUTPUT)
    assert "2/3 Test #2: CliTest.Repeated" in text
    assert "Expected equality of these values: 2 vs 0" in text
    assert "The following tests FAILED:" in text and "2 - CliTest.Repeated (Failed)" in text
    assert "PlanTest.Valid" not in text and "TimerTest.Cupti" not in text
