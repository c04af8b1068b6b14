#!/usr/bin/env bash
# Runs ctest in a build tree, then says why the skipped tests were skipped (one line per
# reason, scripts/ctest_skips.py). Exit status: ctest's.
#   scripts/run_ctest.sh BUILD [ctest arguments...]
set -uo pipefail
BUILD=${1:-build}
shift || true
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$BUILD" || exit 2
ctest --output-on-failure "$@"
rc=$?
python3 "$root/scripts/ctest_skips.py" . || true
exit $rc
