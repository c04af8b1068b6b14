#!/usr/bin/env bash
# Builds with cmake --build, the whole output kept in BUILD/build.log and shown through
# scripts/build_output.py (the expected ptxas spill warnings become one line).
#   scripts/build.sh [--quiet] BUILD JOBS [cmake --build arguments...]
# --quiet (make test): progress lines stay in the log; warnings, errors and a summary are shown.
# Exit status: the build's.
set -uo pipefail
quiet=()
[ "${1:-}" = "--quiet" ] && { quiet=(--quiet); shift; }
BUILD=${1:?usage: build.sh [--quiet] BUILD JOBS [args...]}
JOBS=${2:?usage: build.sh [--quiet] BUILD JOBS [args...]}
shift 2
root="$(cd "$(dirname "$0")/.." && pwd)"
start=$(date +%s)
cmake --build "$BUILD" -j "$JOBS" "$@" 2>&1 | python3 "$root/scripts/build_output.py" --log "$BUILD/build.log" "${quiet[@]}"
rc=${PIPESTATUS[0]}
if [ ${#quiet[@]} -gt 0 ]; then
  steps=$(grep -cE '^\[([0-9]+/[0-9]+| *[0-9]+%)\] ' "$BUILD/build.log" || true)
  if [ "$rc" -eq 0 ]; then
    echo "[build] ok: $steps steps in $(( $(date +%s) - start )) s (log: $BUILD/build.log)"
  else
    echo "[build] FAILED (exit $rc) after $steps steps; the whole output is in $BUILD/build.log" >&2
  fi
fi
exit "$rc"
