"""scripts/build_output.py: expected ptxas spill warnings folded into one line, the rest shown."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "build_output.py"

# A kernel the allowances list (mla_m64_kernel<true, true, true>) and one they do not list.
ALLOWED = "_ZN6mlakit6mla_v13m6414mla_m64_kernelILb1ELb1ELb1EEEvNS0_6ParamsE"
NEW = "_ZN6mlakit6mla_v13m6414mla_m64_kernelILb0ELb0ELb0EEEvNS0_6ParamsE"
OUTPUT = f"""[1/3] Building CUDA object a.cu.o
ptxas warning : Local memory used for function '{ALLOWED}', size of stack frame: 48 bytes
ptxas warning : Registers are spilled to local memory in function '{ALLOWED}', 124 bytes spill stores
[2/3] Building CUDA object b.cu.o
ptxas warning : Registers are spilled to local memory in function '{NEW}', 8 bytes spill stores
[3/3] Linking mlakit
"""


def run(tmp_path, *args):
    log = tmp_path / "build.log"
    r = subprocess.run([sys.executable, str(SCRIPT), "--log", str(log), *args], input=OUTPUT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout, log.read_text()


def test_expected_warnings_become_one_line_and_new_spills_are_shown(tmp_path):
    out, log = run(tmp_path)
    assert log == OUTPUT  # the log keeps everything
    assert ALLOWED not in out
    assert NEW in out and "not allowed local memory" in out
    assert "[build] ptxas: 2 expected warnings for 1 kernels" in out
    assert "[1/3] Building CUDA object a.cu.o" in out  # progress shown without --quiet


def test_quiet_keeps_progress_in_the_log_only(tmp_path):
    out, _ = run(tmp_path, "--quiet")
    assert "[1/3]" not in out and "Linking" not in out
    assert NEW in out and "[build] ptxas: 2 expected" in out


def test_quiet_shows_a_failing_step(tmp_path):
    log = tmp_path / "build.log"
    failing = ("[1/2] Building CXX object x.o\nFAILED: x.o\ng++ -c x.cpp\nx.cpp:1:1: error: 'y' was not declared\n"
               "ninja: build stopped: subcommand failed.\n")
    r = subprocess.run([sys.executable, str(SCRIPT), "--log", str(log), "--quiet"], input=failing,
                       capture_output=True, text=True, timeout=60)
    assert "FAILED: x.o" in r.stdout and "error: 'y' was not declared" in r.stdout
    assert "[1/2]" not in r.stdout
