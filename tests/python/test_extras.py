"""The extras mlakit[torch] and mlakit[plot]: declared in pyproject.toml, and named by the message
a user gets when the extra is missing."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_extras_are_declared():
    text = (ROOT / "pyproject.toml").read_text()
    extras = dict(re.findall(r"^(\w+) = \[(.*)\]$", text.split("[project.optional-dependencies]")[1], re.M))
    assert '"torch' in extras["torch"]
    assert '"matplotlib' in extras["plot"]


def test_compat_without_torch_names_the_extra():
    build = os.environ.get("MLAKIT_BUILD_DIR")
    if not build or not (Path(build) / "python" / "mlakit").is_dir():
        pytest.skip("needs the built binding (MLAKIT_BUILD_DIR, set by scripts/test_python.sh)")
    # sys.modules["torch"] = None makes `import torch` fail as on a machine without PyTorch.
    code = ("import sys; sys.modules['torch'] = None\n"
            "import mlakit\n"
            "try:\n    import mlakit.compat\nexcept ImportError as e:\n"
            "    print(type(e).__name__, e.name, e)\nelse:\n    print('imported')\n")
    r = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=str(Path(build) / "python")),
                       capture_output=True, text=True, timeout=120, cwd=build)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("ModuleNotFoundError torch mlakit.compat needs PyTorch: pip install 'mlakit[torch]'"), \
        r.stdout


def test_the_plot_script_without_matplotlib_names_the_extra(tmp_path):
    records = tmp_path / "bench.jsonl"
    records.write_text("")
    # -S: no site-packages, so matplotlib cannot be imported wherever it is installed.
    r = subprocess.run([sys.executable, "-S", str(ROOT / "scripts" / "plot_report.py"), "--in", str(records),
                        "--png", str(tmp_path / "x.png")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 3, r.stdout + r.stderr
    assert "pip install 'mlakit[plot]'" in r.stderr
