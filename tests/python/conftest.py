"""Tests of the workbench's Python scripts (scripts/): they need neither the binding nor a GPU."""

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))


def find_nvcc():
    """The CUDA compiler on PATH or at CUDA's default prefix; None where there is none."""
    default = Path("/usr/local/cuda/bin/nvcc")
    return shutil.which("nvcc") or (str(default) if default.is_file() else None)
