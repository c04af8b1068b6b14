"""examples/: each script runs to its end and agrees with its own check (a PyTorch reference, or
eager calls for the graph replays). They need PyTorch and an sm_90 GPU: skipped with the reason
elsewhere. Run against the build's binding (scripts/test_python.sh sets MLAKIT_BUILD_DIR), or the
installed package when there is no build."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p.name for p in (ROOT / "examples").glob("*.py"))


def test_the_three_examples_are_there():
    assert EXAMPLES == ["dsa_decode_step.py", "flashmla_dropin.py", "mla_decode_cuda_graph.py"]


def gpu_missing():
    try:
        import torch
    except ImportError:
        return "PyTorch is not installed (pip install 'mlakit[torch]')"
    if not torch.cuda.is_available():
        return "no CUDA device visible"
    if torch.cuda.get_device_capability() != (9, 0):
        return f"the examples need an sm_90 GPU, found {torch.cuda.get_device_name()}"
    return None


@pytest.mark.parametrize("example", EXAMPLES)
def test_example_runs_and_checks_out(example):
    reason = gpu_missing()
    if reason:
        pytest.skip(reason)
    env = dict(os.environ)
    build = os.environ.get("MLAKIT_BUILD_DIR")
    if build and (Path(build) / "python" / "mlakit").is_dir():
        env["PYTHONPATH"] = os.pathsep.join([str(Path(build) / "python"), env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, str(ROOT / "examples" / example)], env=env, capture_output=True,
                       text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.rstrip().endswith("ok"), r.stdout


@pytest.mark.parametrize("example", EXAMPLES)
def test_example_says_why_it_cannot_run(example, tmp_path):
    """Without PyTorch (blocked here) an example prints the reason and exits 0."""
    blocker = tmp_path / "torch.py"
    blocker.write_text("raise ImportError('blocked by the test')\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    r = subprocess.run([sys.executable, str(ROOT / "examples" / example)], env=env, capture_output=True,
                       text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == "skipped: PyTorch is not installed (pip install 'mlakit[torch]')"
