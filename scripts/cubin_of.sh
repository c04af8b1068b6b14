#!/usr/bin/env bash
# Compiles one CUDA translation unit of a build to a cubin with the build's own nvcc command line
# (its flags, includes and defines), for scripts/sass_diff.py. No GPU needed.
#
#   scripts/cubin_of.sh BUILD_DIR SOURCE.cu OUT.cubin [EXTRA NVCC ARGS ...]
#
# EXTRA: flags added to the build's line, such as -DMLAKIT_TIMELINE or a variant's -D. The build
# directory must be configured (make configure) and hold SOURCE.cu among its targets.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 3 ]; then
  echo "usage: scripts/cubin_of.sh BUILD_DIR SOURCE.cu OUT.cubin [EXTRA NVCC ARGS ...]" >&2
  exit 2
fi
BUILD=$1 SRC=$2 OUTFILE=$3
shift 3
[ -f "$BUILD/build.ninja" ] || { echo "cubin_of: error: BUILD_DIR: $BUILD/build.ninja not found (make configure first)" >&2; exit 2; }
[ -f "$SRC" ] || { echo "cubin_of: error: SOURCE: $SRC not found" >&2; exit 2; }
abs_src=$(realpath "$SRC")
case "$OUTFILE" in /*) ;; *) OUTFILE="$PWD/$OUTFILE" ;; esac
line=$(ninja -C "$BUILD" -t commands 2>/dev/null | grep -E 'nvcc .* -x cu -c ' | grep -F -- " -c $abs_src " | head -1 || true)
[ -n "$line" ] || { echo "cubin_of: error: SOURCE: no nvcc compile line for $abs_src in $BUILD" >&2; exit 2; }
cmd=$(sed -E -e 's/ -MD//; s/ -MT [^ ]+//; s/ -MF [^ ]+//; s/ -c / /; s/ -o [^ ]+/ -cubin/' <<<"$line")
extra=""
for a in "$@"; do extra+=" $(printf '%q' "$a")"; done
(cd "$BUILD" && eval "$cmd$extra -o $(printf '%q' "$OUTFILE")")
echo "cubin_of: $OUTFILE"
