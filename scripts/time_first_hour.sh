#!/usr/bin/env bash
# A newcomer's first hour, timed: from fresh clones of the current commit,
#   make run            (bootstrap, configure, the CLI only, the default suite)   target <= 75 s
#   make test           (a second fresh clone: everything built, every test)       target <= 3:00
#   make test again     (nothing to rebuild)                                        target <= 45 s
# each with its wall time and CPU time (user + sys), then where the time went: the slowest
# translation units (ninja's log), the slowest ctest entries and pytest's slowest tests. A
# benchmark, not a test: it prints the figures and the targets met or missed, exit 0 unless a
# command failed. The wall time depends on what else the machine runs: the load average before and
# after each command is recorded, and CPU / cores is given as the wall an idle machine would need
# at best (the builds keep both cores busy). ccache is kept out (CCACHE_DISABLE=1) unless --ccache: a warm cache would time
# a rebuild, not a newcomer's first build.
#   scripts/time_first_hour.sh [--ccache] [WORK_DIR]     (default: a temporary folder, kept)
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
[ "${1:-}" = "--ccache" ] && shift || export CCACHE_DISABLE=1
WORK=${1:-$(mktemp -d /tmp/first-hour.XXXXXX)}
mkdir -p "$WORK"
rev=$(git -C "$ROOT" rev-parse --short HEAD)
say() { echo "[first-hour] $*"; }
results=()

# Runs one make target in a clone, its output in WORK/<label>.log; records wall and CPU seconds.
timed_make() {  # label, clone, target
  local label=$1 clone=$2 target=$3 load_before load_after
  say "$label: make $target in $clone (log: $WORK/$label.log)"
  load_before=$(cut -d' ' -f1 /proc/loadavg)
  /usr/bin/time -f "%e %U %S" -o "$WORK/$label.time" make -C "$clone" "$target" </dev/null >"$WORK/$label.log" 2>&1
  local rc=$?
  read -r wall user sys <"$WORK/$label.time" 2>/dev/null || { wall=0; user=0; sys=0; }
  load_after=$(cut -d' ' -f1 /proc/loadavg)
  results+=("$label $wall $(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }') $rc $load_before $load_after")
  [ $rc -eq 0 ] || { say "$label FAILED (exit $rc); the log's end:"; tail -n 30 "$WORK/$label.log"; }
  return $rc
}

clone() {  # dest
  rm -rf "$1"
  git clone -q "$ROOT" "$1" && git -C "$1" checkout -q "$rev"
}

slowest_units() {  # build dir: the translation units that took longest, from .ninja_log
  awk 'NR > 1 { printf "%8.1f s  %s\n", ($2 - $1) / 1000, $4 }' "$1/.ninja_log" | sort -rn | head -n "${2:-8}"
  awk 'NR > 1 { s += ($2 - $1) / 1000 } END { printf "   %.0f s of compile and link steps in all\n", s }' "$1/.ninja_log"
}

[ -x /usr/bin/time ] || { echo "time_first_hour.sh: needs /usr/bin/time (Debian: apt-get install time)" >&2; exit 2; }
say "revision $rev, $(nproc) cores, work folder $WORK"
clone "$WORK/run"
timed_make make-run "$WORK/run" run
say "make run: slowest steps"
slowest_units "$WORK/run/build"

clone "$WORK/test"
timed_make make-test "$WORK/test" test
say "make test: slowest steps"
slowest_units "$WORK/test/build"
say "make test: slowest ctest entries"
grep -E 'Test +#' "$WORK/test/build/Testing/ctest.log" 2>/dev/null |
  sed -E 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) .* ([0-9.]+) sec$/\2 \1/' | sort -rn | head -n 6 |
  awk '{ printf "%8.1f s  %s\n", $1, $2 }'
timed_make make-test-again "$WORK/test" test
say "pytest's slowest tests (nothing rebuilt)"
(cd "$WORK/test" && PYTHONPATH="$WORK/test/build/python:$WORK/test/tests/pytest_plugins:$WORK/test/.deps/python" \
  MLAKIT_BUILD_DIR="$WORK/test/build" python3 -m pytest -q -p no:cacheprovider python/tests tests/python \
  --durations=6 </dev/null 2>/dev/null | sed -n '/slowest/,/^$/p' | grep -E '^[0-9.]+s' | head -n 6)

echo
cores=$(nproc)
printf '%-16s %8s %8s %12s %8s %11s  %s\n' "command" "wall" "CPU" "CPU/$cores" "target" "load" "verdict (wall)"
status=0
for r in "${results[@]}"; do
  read -r label wall cpu rc lb la <<<"$r"
  case $label in
    make-run) target=75 ;;
    make-test) target=180 ;;
    make-test-again) target=45 ;;
  esac
  verdict=$(awk -v w="$wall" -v t="$target" -v rc="$rc" \
    'BEGIN { print rc != 0 ? "FAILED (exit " rc ")" : (w <= t ? "met" : "missed") }')
  [ "$rc" -eq 0 ] || status=1
  printf '%-16s %7.0fs %7.0fs %11.0fs %7ss %5s-%-5s  %s\n' "$label" "$wall" "$cpu" \
    "$(awk -v c="$cpu" -v n="$cores" 'BEGIN { print c / n }')" "$target" "$lb" "$la" "$verdict"
done
say "logs in $WORK"
exit $status
