#!/usr/bin/env bash
# Runs ctest in a build tree, in parallel (tests labelled RUN_SERIAL still run alone), its whole
# output kept in BUILD/Testing/ctest.log. On success it prints ctest's closing lines and why the
# skipped tests were skipped (one line per reason, scripts/ctest_skips.py); on a failure, the
# failed tests' output as well. Exit status: ctest's.
#   scripts/run_ctest.sh BUILD [ctest arguments...]
#   MLAKIT_CTEST_JOBS=N   parallel tests (default: the number of cores)
#   MLAKIT_CTEST_VERBOSE=1  ctest's own output as it runs, as before
set -uo pipefail
BUILD=${1:-build}
shift || true
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$BUILD" || exit 2
jobs=${MLAKIT_CTEST_JOBS:-$(nproc 2>/dev/null || echo 2)}
log=Testing/ctest.log
mkdir -p Testing
if [ "${MLAKIT_CTEST_VERBOSE:-0}" = 1 ]; then
  ctest --output-on-failure -j "$jobs" "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
else
  ctest --output-on-failure -j "$jobs" "$@" >"$log" 2>&1
  rc=$?
  if [ $rc -ne 0 ]; then
    # The failed tests' output (--output-on-failure put it in the log) and ctest's list of them.
    python3 "$root/scripts/ctest_skips.py" --failures "$log" || cat "$log"
  fi
  # ctest's closing lines: "100% tests passed, 0 tests failed out of N" and the total time.
  grep -E '^[0-9]+% tests passed|^Total Test time|^No tests were found' "$log"
fi
python3 "$root/scripts/ctest_skips.py" . || true
echo "ctest: full log in $PWD/$log"
exit $rc
