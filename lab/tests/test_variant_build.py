"""lab/scripts/variant_build.sh: the CLI linked with one or more translation units compiled again (extra
flags, or a git revision's sources)."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, find_nvcc

SCRIPT = ROOT / "lab" / "scripts" / "variant_build.sh"


def run(*args):
    return subprocess.run(["bash", str(SCRIPT), *map(str, args)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


@pytest.mark.parametrize("args, message", [
    ([], "usage"),
    (["--rev"], "--rev needs a revision"),
    (["build", "bad name", "x.cu"], "NAME may hold letters"),
    (["/nonexistent", "v", "x.cu"], "BUILD_DIR"),
])
def test_bad_arguments_name_the_argument(args, message):
    r = run(*args)
    assert r.returncode == 2 and message in r.stderr, r.stderr


def built_tree():
    build = os.environ.get("MLAKIT_BUILD_DIR")
    if not build or not (Path(build) / "mlakit").is_file() or find_nvcc() is None:
        pytest.skip("needs a built tree (MLAKIT_BUILD_DIR=build, lab/README.md) and nvcc")
    return Path(build)


def test_a_variant_links_and_runs():
    build = built_tree()
    name = f"pytest-{os.getpid()}"
    try:
        r = run(build, name, "src/kernels/dsa_decode/check_indices.cu", "-DMLAKIT_VARIANT_BUILD_TEST=1")
        assert r.returncode == 0, r.stderr
        binary = build / "variants" / name / "mlakit"
        # stdout is the path alone, so that B=$(lab/scripts/variant_build.sh ...) takes it.
        assert r.stdout.strip().endswith(f"variants/{name}/mlakit") and "\n" not in r.stdout.strip()
        assert (ROOT / r.stdout.strip()).resolve() == binary.resolve() and binary.is_file()
        assert (build / "variants" / name / "flags").read_text().strip() == "-DMLAKIT_VARIANT_BUILD_TEST=1"
        v = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60)
        assert v.returncode == 0 and v.stdout.startswith("mlakit ")
        r = run(build, name, "src/kernels/dsa_decode/no_such.cu")
        assert r.returncode == 2 and "SOURCE" in r.stderr
        # Several units: each compiled with the flags, all linked; a bad list names the SOURCE.
        two = "src/kernels/dsa_decode/check_indices.cu,src/kernels/workbench/timing_kernels.cu"
        r = run(build, name, two, "-DMLAKIT_VARIANT_BUILD_TEST=1")
        assert r.returncode == 0, r.stderr
        objs = sorted(p.name for p in (build / "variants" / name).glob("*.o"))
        assert objs == ["check_indices.cu.o", "timing_kernels.cu.o"], objs
        v = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60)
        assert v.returncode == 0 and v.stdout.startswith("mlakit ")
        for bad, message in [("src/kernels/dsa_decode/check_indices.cu,,x.cu", "an empty name"),
                             ("src/kernels/dsa_decode/check_indices.cu,src/kernels/dsa_decode/check_indices.cu",
                              "two units named"),
                             ("src/kernels/dsa_decode/check_indices.cu,src/no_such.cu", "SOURCE")]:
            r = run(build, name, bad)
            assert r.returncode == 2 and message in r.stderr, (bad, r.stderr)
        r = run("--rev", "no-such-revision", build, name, "src/kernels/dsa_decode/check_indices.cu")
        assert r.returncode == 2 and "is not a commit" in r.stderr
        # A revision's build names the commit it compiled (HEAD is the checkout's own, which a
        # copied tree need not have moved).
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        r = run("--rev", "HEAD", build, name, "src/kernels/dsa_decode/check_indices.cu")
        assert r.returncode == 0 and f"at HEAD = {head.stdout.strip()})" in r.stderr, r.stderr
    finally:
        shutil.rmtree(build / "variants" / name, ignore_errors=True)
