#!/usr/bin/env bash
# Runs the binding's pytest suite against the module built in the CMake tree.
set -uo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/.."
if [ ! -d "$BUILD/python/mlakit" ]; then
  echo "[python] the binding was not built (nanobind missing?); Python tests not run"
  exit 0
fi
if ! python3 -c "import pytest" 2>/dev/null; then
  echo "[python] pytest is not installed; Python tests not run"
  exit 0
fi
PYTHONPATH="$PWD/$BUILD/python${PYTHONPATH:+:$PYTHONPATH}" python3 -m pytest -q python/tests
rc=$?
[ $rc -eq 5 ] && { echo "[python] no tests collected"; exit 1; }
exit $rc
