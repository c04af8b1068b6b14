"""Tests of the lab (lab/): its scripts and the micro-benchmarks' list. Run apart from the
product's tests: python3 -m pytest lab/tests (lab/README.md)."""

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "lab" / "scripts"))


def find_nvcc():
    """The CUDA compiler on PATH or at CUDA's default prefix; None where there is none."""
    default = Path("/usr/local/cuda/bin/nvcc")
    return shutil.which("nvcc") or (str(default) if default.is_file() else None)
