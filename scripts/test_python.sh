#!/usr/bin/env bash
# Runs the binding's pytest suite against the module built in the CMake tree.
set -uo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/.."
if [ ! -d "$BUILD/python/mlakit" ]; then
  echo "[python] the binding was not built (nanobind missing?); Python tests not run"
  exit 0
fi
export PYTHONPATH="$PWD/$BUILD/python${PYTHONPATH:+:$PYTHONPATH}"
if ! python3 -c "import pytest" 2>/dev/null; then
  # The bootstrap's copy, only when the machine has none (it would shadow an installed one).
  export PYTHONPATH="$PYTHONPATH:$PWD/.deps/python"
  if ! python3 -c "import pytest" 2>/dev/null; then
    echo "[python] pytest is not installed and .deps/ has none; Python tests not run"
    exit 0
  fi
fi
python3 -m pytest -q python/tests
rc=$?
[ $rc -eq 5 ] && { echo "[python] no tests collected"; exit 1; }
exit $rc
