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

