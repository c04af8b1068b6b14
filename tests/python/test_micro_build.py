"""tools/micro: every micro-benchmark still compiles against the kernels' headers it includes (they
are not part of the build, and a kernel change can break one unseen until its next run)."""

import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import ROOT, find_nvcc

MICRO = ROOT / "tools" / "micro"
SOURCES = sorted(p.name for p in MICRO.glob("*.cu"))


def test_every_micro_benchmark_is_listed_in_the_readme():
    readme = (MICRO / "README.md").read_text()
    assert SOURCES, "tools/micro has no sources"
    missing = [s for s in SOURCES if f"| {s} |" not in readme]
    assert not missing, f"tools/micro/README.md lists no row for {missing}"


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """Every micro-benchmark compiled once, as many at a time as there are cores (each nvcc is one
    process; one after another they took ~125 s of a two-core make test): {source: result}."""
    build = os.environ.get("MLAKIT_BUILD_DIR")
    compiler = find_nvcc()
    if not build or not (Path(build) / "include").is_dir() or compiler is None:
        pytest.skip("needs a configured build (MLAKIT_BUILD_DIR, set by scripts/test_python.sh) and nvcc")
    out = tmp_path_factory.mktemp("micro")

    def compile_one(source):
        # The README's build line (host and device code, no link).
        cmd = [compiler, "-std=c++20", "-O3", "-gencode=arch=compute_90a,code=sm_90a", "--expt-relaxed-constexpr",
               "-I", "src", "-I", "include", "-I", str(Path(build) / "include"), "-I", ".deps/cutlass/include",
               "-c", "-o", str(out / (source + ".o")), str(MICRO / source)]
        return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return dict(zip(SOURCES, pool.map(compile_one, SOURCES)))


@pytest.mark.parametrize("source", SOURCES)
def test_micro_benchmark_compiles(source, compiled):
    r = compiled[source]
    assert r.returncode == 0, r.stderr[-4000:]
