"""scripts/sass_local_memory.py: kernels' LDL / STL held to scripts/sass_local_memory.txt."""

import shutil

import pytest

import sass_local_memory
from conftest import ROOT
from test_sass_listing import listing

needs_cxxfilt = pytest.mark.skipif(shutil.which("c++filt") is None, reason="c++filt (binutils) not installed")


def files(tmp_path, allowances, functions):
    allow = tmp_path / "allow.txt"
    allow.write_text(allowances)
    sass = tmp_path / "unit.sass"
    sass.write_text(listing(functions))
    return [str(allow), str(sass)]


SPILLS = ["STL [R1], R8", "STL [R1+0x4], R6", "LDL R4, [R1]", "EXIT"]
CLEAN = ["FMUL R1, R2, R3", "EXIT"]


@needs_cxxfilt
def test_within_over_and_unlisted(tmp_path, capsys):
    args = files(tmp_path, "# comment\n3 ^one\\(\\)\n5 two  # a trailing comment\n",
                 {"_Z3onev": SPILLS, "_Z3twov": SPILLS, "_Z5cleanv": CLEAN})
    assert sass_local_memory.main(args) == 0
    out = capsys.readouterr().out
    assert "one(): 3 LDL / STL (allowed 3)" in out and "within the allowances" in out
    assert "clean" not in out  # a kernel without local memory is not listed

    args = files(tmp_path, "2 ^one\\(\\)\n", {"_Z3onev": SPILLS})
    assert sass_local_memory.main(args) == 1
    assert "one(): 3 LDL / STL, more than the 2 of allowance line 1" in capsys.readouterr().out

    args = files(tmp_path, "9 ^other\n", {"_Z3onev": SPILLS})
    assert sass_local_memory.main(args) == 1
    assert "none allowed (not in the allowances)" in capsys.readouterr().out


@needs_cxxfilt
def test_an_allowance_no_kernel_uses_is_a_finding(tmp_path, capsys):
    args = files(tmp_path, "3 ^one\\(\\)\n5 ^gone\n", {"_Z3onev": SPILLS, "_Z4gonev": CLEAN})
    assert sass_local_memory.main(args) == 1
    assert "allowance line 2 (5 for '^gone') matches no kernel with local memory; remove it" in capsys.readouterr().out


@needs_cxxfilt
def test_the_first_matching_line_counts(tmp_path, capsys):
    args = files(tmp_path, "1 one\n9 one\n", {"_Z3onev": SPILLS})
    assert sass_local_memory.main(args) == 1
    assert "more than the 1 of allowance line 1" in capsys.readouterr().out


def test_no_local_memory_anywhere(tmp_path, capsys):
    assert sass_local_memory.main(files(tmp_path, "", {"_Z5cleanv": CLEAN})) == 0
    assert "none in any kernel" in capsys.readouterr().out
    assert sass_local_memory.main(files(tmp_path, "4 clean\n", {"_Z5cleanv": CLEAN})) == 1  # a stale allowance


@pytest.mark.parametrize("allowances, message", [("x one\n", "expected 'MAX REGEX'"), ("3 (\n", "bad regex")])
def test_bad_allowances_name_the_line(tmp_path, capsys, allowances, message):
    assert sass_local_memory.main(files(tmp_path, allowances, {"_Z3onev": SPILLS})) == 2
    err = capsys.readouterr().err
    assert "ALLOWANCES" in err and ":1:" in err and message in err


def test_usage_and_missing_listing(tmp_path, capsys):
    assert sass_local_memory.main([]) == 2
    assert "usage" in capsys.readouterr().err
    allow = tmp_path / "a.txt"
    allow.write_text("")
    assert sass_local_memory.main([str(allow), str(tmp_path / "none.sass")]) == 2
    assert "LISTING" in capsys.readouterr().err


def test_the_project_allowances_parse():
    rules = sass_local_memory.read_allowances(ROOT / "scripts" / "sass_local_memory.txt")
    assert rules and all(m > 0 for m, _, _ in rules)
