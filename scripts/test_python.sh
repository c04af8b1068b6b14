#!/usr/bin/env bash
# Runs the pytest suites: python/tests (the binding, against the module built in the CMake tree)
# and tests/python (the workbench's Python scripts; they need no binding). Skipped tests are
# summed up with one line per reason (tests/pytest_plugins/skip_summary.py).
set -uo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/.."
suites=(tests/python)
if [ -d "$BUILD/python/mlakit" ]; then
  suites=(python/tests tests/python)
  export PYTHONPATH="$PWD/$BUILD/python${PYTHONPATH:+:$PYTHONPATH}"
else
  echo "[python] the binding was not built (nanobind missing?); python/tests not run"
fi
export MLAKIT_BUILD_DIR="$PWD/$BUILD"
export PYTHONPATH="$PWD/tests/pytest_plugins${PYTHONPATH:+:$PYTHONPATH}"
if ! python3 -c "import pytest" 2>/dev/null; then
  # The bootstrap's copy, only when the machine has none (it would shadow an installed one).
  export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$PWD/.deps/python"
  if ! python3 -c "import pytest" 2>/dev/null; then
    echo "[python] pytest is not installed and .deps/ has none; Python tests not run"
    exit 0
  fi
fi
python3 -m pytest -q -p skip_summary "${suites[@]}"
rc=$?
[ $rc -eq 5 ] && { echo "[python] no tests collected"; exit 1; }
exit $rc
