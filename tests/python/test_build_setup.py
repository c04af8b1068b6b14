"""The build setup a newcomer meets: one version, `make run` building only the CLI, ccache as the
compiler launcher when present, the CI's check of third-party warnings in the build log."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CMAKE_VERSION = re.search(r"^project\(mlakit VERSION (\d+\.\d+\.\d+)",
                          (ROOT / "CMakeLists.txt").read_text(), re.M).group(1)


def test_the_version_is_written_once_and_read_everywhere():
    pyproject = (ROOT / "pyproject.toml").read_text()
    regex = re.search(r"^metadata\.version\.regex = '(.+)'$", pyproject, re.M).group(1)
    assert re.search(regex, (ROOT / "CMakeLists.txt").read_text()).group("value") == CMAKE_VERSION
    assert 'metadata.version.input = "CMakeLists.txt"' in pyproject
    assert "@PROJECT_VERSION@" in (ROOT / "cmake" / "version.h.in").read_text()
    assert 'MLAKIT_VERSION="${PROJECT_VERSION}"' in (ROOT / "python" / "CMakeLists.txt").read_text()
    assert f"## {CMAKE_VERSION} - " in (ROOT / "CHANGELOG.md").read_text()
    build = os.environ.get("MLAKIT_BUILD_DIR")
    header = Path(build) / "include" / "mlakit" / "version.h" if build else None
    if header is not None and header.is_file():
        assert f'#define MLAKIT_VERSION_STRING "{CMAKE_VERSION}"' in header.read_text()


def make_dry_run(target, build_dir):
    # Not the flags of a make this test may run under (make test): a plain dry run.
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    r = subprocess.run(["make", "--no-print-directory", "-n", target, f"BUILD={build_dir}",
                        "JOBS=2"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return [line for line in r.stdout.splitlines() if line.strip() and not line.startswith("make")]


def test_make_run_builds_only_the_cli(tmp_path):
    lines = make_dry_run("run", tmp_path / "b")
    builds = [line for line in lines if "scripts/build.sh" in line]
    assert builds == [f"bash scripts/build.sh {tmp_path / 'b'} 2 --target mlakit_cli"]
    assert "cmake --build \"$BUILD\" -j \"$JOBS\" \"$@\"" in (ROOT / "scripts" / "build.sh").read_text()
    assert lines[-1] == f"{tmp_path / 'b'}/mlakit bench --suite dsa-contest"


def test_make_test_lists_skip_reasons(tmp_path):
    lines = make_dry_run("test", tmp_path / "b")
    assert f"bash scripts/build.sh --quiet {tmp_path / 'b'} 2" in lines
    assert f"bash scripts/run_ctest.sh {tmp_path / 'b'}" in lines
    assert f"bash scripts/test_python.sh {tmp_path / 'b'}" in lines
    assert "-p skip_summary" in (ROOT / "scripts" / "test_python.sh").read_text()


def test_make_run_and_make_test_build_no_lab(tmp_path):
    """lab/ (micro-benchmarks) is configured only with MLAKIT_BUILD_LAB=ON, which no make target sets."""
    top = (ROOT / "CMakeLists.txt").read_text()
    assert re.search(r'^option\(MLAKIT_BUILD_LAB "[^"]*" OFF\)$', top, re.M)
    assert re.findall(r"^.*add_subdirectory\(lab\).*$", top, re.M) == ["  add_subdirectory(lab)"]
    assert "if(MLAKIT_BUILD_LAB)\n  add_subdirectory(lab)\nendif()" in top
    for target in ("run", "test"):
        lines = make_dry_run(target, tmp_path / "b")
        assert any(line.startswith("cmake -S . -B") for line in lines)  # the configure is in the dry run
        assert not [line for line in lines if "MLAKIT_BUILD_LAB" in line or "lab" in line.split()], lines


def test_ccache_is_the_compiler_launcher_when_it_is_on_path(tmp_path):
    if shutil.which("cmake") is None or shutil.which("nvcc") is None:
        pytest.skip("cmake or nvcc not found")
    if not (ROOT / ".deps" / "cutlass" / "include" / "cute" / "tensor.hpp").is_file():
        pytest.skip(".deps/ has no CUTLASS (run 'make deps')")
    fake = tmp_path / "bin" / "ccache"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\nexec "$@"\n')
    fake.chmod(0o755)
    env = dict(os.environ, PATH=f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    build = tmp_path / "build"

    def configure(*extra):
        r = subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build), "-DMLAKIT_BUILD_TESTS=OFF",
                            "-DMLAKIT_BUILD_PYTHON=OFF", "-DMLAKIT_BOOTSTRAP=OFF", *extra],
                           env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
        generated = "".join(p.read_text(errors="replace") for p in build.rglob("*")
                            if p.is_file() and p.name in ("build.ninja", "build.make"))
        return r.stdout, generated

    out, generated = configure()
    assert f"mlakit: compiling through {fake}" in out
    assert f"{fake} " in generated or f"{fake}\n" in generated  # the C++ and CUDA compile lines
    out, generated = configure("-DMLAKIT_CCACHE=OFF")
    assert "compiling through" not in out and str(fake) not in generated


def test_the_ci_build_log_check_flags_third_party_warnings_only(tmp_path):
    script = ROOT / "scripts" / "check_build_log.sh"
    quiet = tmp_path / "quiet.log"
    quiet.write_text("[1/2] Building CXX object a.o\n"
                     "[bootstrap] warning: pytest is not importable and could not be fetched.\n"
                     "/work/src/plan/x.cpp:3:1: warning: unused variable 'y' [-Wunused-variable]\n")
    noisy = tmp_path / "noisy.log"
    noisy.write_text("[63/83] Building CXX object googletest/gtest-all.cc.o\n"
                     "/usr/include/c++/12/bits/char_traits.h:431:56: warning: 'void* "
                     "__builtin_memcpy(...)' may overlap [-Wrestrict]\n"
                     "/x/.deps/cutlass/include/cute/tensor.hpp:9:2: warning: deprecated\n")
    r = subprocess.run(["bash", str(script), str(quiet)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 warning from the project's own code" in r.stdout
    r = subprocess.run(["bash", str(script), str(noisy)], capture_output=True, text=True)
    assert r.returncode == 1
    assert "2 compiler warnings from third-party code" in r.stdout + r.stderr


def test_make_scan_sass_runs_the_scanner_on_the_build(tmp_path):
    lines = make_dry_run("scan-sass", tmp_path / "b")
    assert f"bash scripts/scan_sass.sh {tmp_path / 'b'}" in lines


def test_the_sass_scan_names_a_build_it_cannot_read(tmp_path):
    r = subprocess.run(["bash", str(ROOT / "scripts" / "scan_sass.sh"), str(tmp_path / "none")], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert f"{tmp_path / 'none'}/build.ninja not found" in r.stderr


def _pins_of_bootstrap():
    text = (ROOT / "scripts" / "bootstrap.sh").read_text()
    return {k: v for k, v in re.findall(r"^([A-Z0-9_]+)_VERSION=(\S+)$", text, re.M)}


def test_the_build_requirements_and_the_bootstrap_pin_the_same_versions():
    """pip builds take CUTLASS, nanobind, nlohmann/json and nvml.h from pyproject's build
    requirements, `make` from .deps/ (scripts/bootstrap.sh): the two must not drift apart."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    requires = dict(re.findall(r'^\s*"([A-Za-z0-9_.-]+)==([^"]+)",$', pyproject, re.M))
    pins = _pins_of_bootstrap()
    assert requires["nvidia-cutlass"] == pins["CUTLASS"]
    assert requires["nanobind"] == pins["NANOBIND"]
    assert requires["nlohmann-json"] == pins["JSON"]
    assert requires["nvidia-nvml-dev"] == pins["NVML"]
    assert "scikit-build-core" in requires
    # Every requirement pinned exactly (a range would let two builds differ).
    block = re.search(r"^requires = \[(.*?)\]", pyproject, re.M | re.S).group(1)
    assert all("==" in r for r in re.findall(r'"([^"]+)"', block)), block


def test_no_pin_is_a_distribution_package_version():
    """Pins are PyPI versions or files checked by sha256; nothing asks apt for a version."""
    text = (ROOT / "scripts" / "bootstrap.sh").read_text()
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    assert "apt-get" not in code and "dpkg" not in code
    debs = re.findall(r"^([A-Z0-9]+)_DEB=pool/\S+\.deb$", text, re.M)
    assert debs, "no Debian pool file pinned (CLI11, GoogleTest)"
    for prefix in debs:
        assert re.search(rf"^{prefix}_SHA256=[0-9a-f]{{64}}$", text, re.M), prefix


def test_the_notices_name_every_shipped_component_with_its_pinned_version():
    notices = (ROOT / "THIRD_PARTY_NOTICES").read_text()
    pins = _pins_of_bootstrap()
    for name, key in (("CUTLASS / CuTe", "CUTLASS"), ("nanobind", "NANOBIND"), ("nlohmann/json", "JSON"),
                      ("CLI11", "CLI11"), ("nvml.h (NVML)", "NVML")):
        assert re.search(rf"^{re.escape(name)}\s+{re.escape(pins[key])}\s", notices, re.M), (name, pins[key])
    for licence in ("BSD-3-Clause", "MIT"):
        assert licence in notices
    assert "THIRD_PARTY_NOTICES" in (ROOT / "pyproject.toml").read_text()
    assert "THIRD_PARTY_NOTICES" in (ROOT / "cmake" / "MlakitInstall.cmake").read_text()


def test_make_sanitize_without_a_gpu_says_why_and_exits_0(tmp_path):
    if any(Path("/dev").glob("nvidia[0-9]*")):
        pytest.skip("an NVIDIA GPU is visible: make sanitize would run")
    fake = tmp_path / "bin" / "compute-sanitizer"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    for path, reason in ((os.environ["PATH"], None), (f"{fake.parent}{os.pathsep}{os.environ['PATH']}",
                                                       "no NVIDIA GPU visible")):
        r = subprocess.run(["make", "--no-print-directory", "sanitize", f"BUILD={tmp_path / 'b'}"], cwd=ROOT,
                           env=dict(env, PATH=path), capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "[sanitize] skipped: " in r.stdout
        if reason is None and shutil.which("compute-sanitizer", path=path) is None and \
                not Path("/usr/local/cuda/bin/compute-sanitizer").exists():
            assert "compute-sanitizer not found" in r.stdout
        if reason:
            assert reason in r.stdout
        assert not (tmp_path / "b").exists()  # nothing configured or built


def test_the_cli_and_the_python_package_report_the_same_version():
    """`mlakit --version` and `mlakit.__version__`, from the build `make test` runs against."""
    build = os.environ.get("MLAKIT_BUILD_DIR")
    if not build or not (Path(build) / "mlakit").is_file():
        pytest.skip("needs the build's CLI (MLAKIT_BUILD_DIR, set by scripts/test_python.sh)")
    if not (Path(build) / "python" / "mlakit").is_dir():
        pytest.skip("the binding was not built (nanobind missing)")
    cli = subprocess.run([str(Path(build) / "mlakit"), "--version"], capture_output=True, text=True, timeout=60)
    assert cli.returncode == 0, cli.stderr
    env = dict(os.environ, PYTHONPATH=str(Path(build) / "python"))
    py = subprocess.run([sys.executable, "-c", "import mlakit; print(mlakit.__version__)"], env=env,
                        capture_output=True, text=True, timeout=120, cwd=build)
    assert py.returncode == 0, py.stderr
    assert cli.stdout.strip() == f"mlakit {py.stdout.strip()}" == f"mlakit {CMAKE_VERSION}"


def test_each_release_of_the_changelog_names_each_section_once():
    text = (ROOT / "CHANGELOG.md").read_text()
    releases = re.split(r"^## ", text, flags=re.M)[1:]
    assert releases and releases[0].startswith(f"{CMAKE_VERSION} - "), "the newest release is the version"
    assert not any(r.startswith("Unreleased") and "\n### " not in r for r in releases[:1])
    for release in releases:
        headings = re.findall(r"^### (.+)$", release, re.M)
        assert len(headings) == len(set(headings)), (release.splitlines()[0], headings)
        entries = [e.strip() for e in re.findall(r"^- (.+)$", release, re.M)]
        assert len(entries) == len(set(entries)), release.splitlines()[0]
