"""The mixed-shape stress sequences of stress.py, each in fresh processes (GPU only).

MLAKIT_STRESS_PROCESSES (default 2) sets how many fresh processes each op gets; every process
draws a new seed (printed with any failure, so that `python stress.py OP --seed S` repeats it).
"""

import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.parametrize("op", ["mla", "dsa", "dsa-fp8"])
def test_mixed_shape_sequences_in_fresh_processes(gpu, op):
    import mlakit

    env = dict(os.environ)
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(mlakit.__file__)))
    env["PYTHONPATH"] = package_parent + os.pathsep + env.get("PYTHONPATH", "")
    processes = int(os.environ.get("MLAKIT_STRESS_PROCESSES", "2"))
    failed = []
    for _ in range(processes):
        run = subprocess.run([sys.executable, os.path.join(HERE, "stress.py"), op], env=env,
                             capture_output=True, text=True, timeout=900)
        if run.returncode != 0:
            failed.append(run.stdout[-4000:] + run.stderr[-4000:])
    assert not failed, f"{len(failed)} of {processes} processes failed:\n" + "\n".join(failed)
