#!/usr/bin/env bash
# Compiles one CUDA translation unit of a build to a cubin with the build's own nvcc command line
# (its flags, includes and defines), for scripts/sass_diff.py. No GPU needed.
#
#   scripts/cubin_of.sh [--rev REV] BUILD_DIR SOURCE.cu OUT.cubin [EXTRA NVCC ARGS ...]
#
# EXTRA: flags added to the build's line, such as -DMLAKIT_TIMELINE or a variant's -D. --rev REV
# compiles the sources of git revision REV instead of the working tree's (a temporary worktree,
# removed after; the build's generated headers are used as they are). The build directory must be
# configured (make configure) and hold SOURCE.cu among its targets.
set -euo pipefail
cd "$(dirname "$0")/.."
rev=""
if [ "${1:-}" = "--rev" ]; then
  [ $# -ge 2 ] || { echo "cubin_of: error: --rev needs a revision" >&2; exit 2; }
  rev=$2
  shift 2
fi
if [ $# -lt 3 ]; then
  echo "usage: scripts/cubin_of.sh [--rev REV] BUILD_DIR SOURCE.cu OUT.cubin [EXTRA NVCC ARGS ...]" >&2
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
if [ -n "$rev" ]; then
  git rev-parse --verify --quiet "$rev^{commit}" >/dev/null || { echo "cubin_of: error: --rev: '$rev' is not a commit" >&2; exit 2; }
  tree=$(mktemp -d)
  trap 'git worktree remove --force "$tree" >/dev/null 2>&1 || rm -rf "$tree"' EXIT
  git worktree add --detach --quiet "$tree" "$rev"
  [ -f "$tree/${abs_src#"$PWD"/}" ] || { echo "cubin_of: error: SOURCE: ${abs_src#"$PWD"/} does not exist at $rev" >&2; exit 2; }
  # The sources and includes of the working tree, read from the revision's tree instead (the
  # third-party headers under .deps/ and the build's generated ones stay where they are).
  cmd=$(sed -E -e "s# $PWD/src/# $tree/src/#g; s# -I$PWD/include# -I$tree/include#g; s# -I$PWD/src# -I$tree/src#g" <<<"$cmd")
fi
extra=""
for a in "$@"; do extra+=" $(printf '%q' "$a")"; done
(cd "$BUILD" && eval "$cmd$extra -o $(printf '%q' "$OUTFILE")")
echo "cubin_of: $OUTFILE${rev:+ (sources of $rev)}"
