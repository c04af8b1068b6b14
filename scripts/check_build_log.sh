#!/usr/bin/env bash
# CI check of a clean build's log: no compiler warning may come from third-party code (.deps/,
# system and CUDA headers under /usr); the project's own warnings are counted and shown, not
# failed on (they are its authors' to fix, and ptxas spill reports are wanted).
#   scripts/check_build_log.sh BUILD_LOG
set -uo pipefail
log=${1:?usage: check_build_log.sh BUILD_LOG}
# GCC/Clang "file:line:col: warning:" and nvcc "file(line): warning #N-D:".
pattern='^[^ ]+(:[0-9]+:[0-9]+: |\([0-9]+\): )warning'
third_party=$(grep -E "$pattern" "$log" | grep -E '^(/usr/|[^ ]*/\.deps/)' || true)
own=$(grep -E "$pattern" "$log" | grep -vE '^(/usr/|[^ ]*/\.deps/)' || true)
count() { [ -z "$1" ] && echo 0 || echo "$1" | wc -l; }
n_third=$(count "$third_party")
n_own=$(count "$own")
if [ "$n_own" -gt 0 ]; then
  echo "[build-log] $n_own warning$([ "$n_own" -gt 1 ] && echo s) from the project's own code:"
  echo "$own" | sed 's/^/  /'
fi
if [ "$n_third" -gt 0 ]; then
  echo "[build-log] $n_third compiler warnings from third-party code (silence them on the third-party target only):" >&2
  echo "$third_party" | sed 's/^/  /' >&2
  exit 1
fi
echo "[build-log] no compiler warning from third-party code"
