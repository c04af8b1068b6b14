"""lab/micro: every micro-benchmark has its row in the README. That each still compiles against the
kernels' headers is the build's job: target mlakit_lab of a build with MLAKIT_BUILD_LAB=ON."""

from conftest import ROOT

MICRO = ROOT / "lab" / "micro"


def test_every_micro_benchmark_is_listed_in_the_readme():
    sources = sorted(p.name for p in MICRO.glob("*.cu"))
    assert sources, "lab/micro has no sources"
    readme = (MICRO / "README.md").read_text()
    missing = [s for s in sources if f"| {s} |" not in readme]
    assert not missing, f"lab/micro/README.md lists no row for {missing}"


def test_the_lab_is_off_by_default_and_builds_every_micro_benchmark():
    top = (ROOT / "CMakeLists.txt").read_text()
    assert 'option(MLAKIT_BUILD_LAB "Build the lab: micro-benchmarks (lab/)" OFF)' in top
    assert "if(MLAKIT_BUILD_LAB)\n  add_subdirectory(lab)\nendif()" in top
    lab = (ROOT / "lab" / "CMakeLists.txt").read_text()
    assert "${CMAKE_CURRENT_SOURCE_DIR}/micro/*.cu" in lab and "add_custom_target(mlakit_lab)" in lab
