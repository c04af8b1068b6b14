"""Tests of the workbench's Python scripts (scripts/): they need neither the binding nor a GPU."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
