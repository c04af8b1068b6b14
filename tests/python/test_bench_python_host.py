"""scripts/bench_python_host.py: where nothing can be measured it says why and exits 0."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_without_torch_it_says_why_and_exits_0(tmp_path):
    (tmp_path / "torch.py").write_text("raise ImportError('blocked by the test')\n")
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_python_host.py"), "--only", "breakdown"],
                       env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True,
                       timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == "bench_python_host: skipped: PyTorch is not installed (pip install 'mlakit[torch]')"


def test_bad_arguments_exit_2():
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_python_host.py"), "--pages", "1"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert "--pages * --page-size must be at least --topk" in r.stderr
