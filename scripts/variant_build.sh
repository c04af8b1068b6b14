#!/usr/bin/env bash
# Builds a variant of the mlakit CLI in which one CUDA translation unit is compiled again with extra
# nvcc flags (a variant's -D, a diagnosis define) or from a git revision's sources, everything else
# taken from the build as it is. For A/B timing (scripts/ab_bench.py) of an idea before it is
# written as the code: ~10-40 s per variant on two cores, against a build directory per variant.
#
#   scripts/variant_build.sh [--rev REV] BUILD_DIR NAME SOURCE.cu [EXTRA NVCC ARGS ...]
#
# Writes BUILD_DIR/variants/NAME/mlakit (and the translation unit's object beside it) and prints its
# path. The object is linked ahead of the build's libraries, so the linker takes every symbol of the
# translation unit from it and never pulls the library's own copy. The build must be built (make
# build): its objects and libraries are linked as they are. The variant binary says nothing of
# itself when it runs: name it, and keep the flags with the figures (devlog).
set -euo pipefail
cd "$(dirname "$0")/.."
rev=""
if [ "${1:-}" = "--rev" ]; then
  [ $# -ge 2 ] || { echo "variant_build: error: --rev needs a revision" >&2; exit 2; }
  rev=$2
  shift 2
fi
if [ $# -lt 3 ]; then
  echo "usage: scripts/variant_build.sh [--rev REV] BUILD_DIR NAME SOURCE.cu [EXTRA NVCC ARGS ...]" >&2
  exit 2
fi
BUILD=$1 NAME=$2 SRC=$3
shift 3
[[ "$NAME" =~ ^[A-Za-z0-9_-]+$ ]] || { echo "variant_build: error: NAME may hold letters, digits, '-' and '_' only; got '$NAME'" >&2; exit 2; }
[ -f "$BUILD/build.ninja" ] || { echo "variant_build: error: BUILD_DIR: $BUILD/build.ninja not found (make build first)" >&2; exit 2; }
[ -x "$BUILD/mlakit" ] || { echo "variant_build: error: BUILD_DIR: $BUILD/mlakit not built (make build first)" >&2; exit 2; }
[ -f "$SRC" ] || { echo "variant_build: error: SOURCE: $SRC not found" >&2; exit 2; }
abs_src=$(realpath "$SRC")
line=$(ninja -C "$BUILD" -t commands 2>/dev/null | grep -E 'nvcc .* -x cu -c ' | grep -F -- " -c $abs_src " | head -1 || true)
[ -n "$line" ] || { echo "variant_build: error: SOURCE: no nvcc compile line for $abs_src in $BUILD" >&2; exit 2; }
link=$(ninja -C "$BUILD" -t commands mlakit 2>/dev/null | tail -1)
grep -q -- " -o mlakit " <<<"$link" && grep -q " libmlakit_kernels.a " <<<"$link" ||
  { echo "variant_build: error: BUILD_DIR: the link line of mlakit is not the expected one" >&2; exit 2; }
out="$BUILD/variants/$NAME"
mkdir -p "$out"
obj="$(realpath "$out")/$(basename "$SRC").o"
cmd=$(sed -E -e 's/ -MD//; s/ -MT [^ ]+//; s/ -MF [^ ]+//; s/ -o [^ ]+//' <<<"$line")
if [ -n "$rev" ]; then
  git rev-parse --verify --quiet "$rev^{commit}" >/dev/null || { echo "variant_build: error: --rev: '$rev' is not a commit" >&2; exit 2; }
  tree=$(mktemp -d)
  trap 'git worktree remove --force "$tree" >/dev/null 2>&1 || rm -rf "$tree"' EXIT
  git worktree add --detach --quiet "$tree" "$rev"
  [ -f "$tree/${abs_src#"$PWD"/}" ] || { echo "variant_build: error: SOURCE: ${abs_src#"$PWD"/} does not exist at $rev" >&2; exit 2; }
  cmd=$(sed -E -e "s# $PWD/src/# $tree/src/#g; s# -I$PWD/include# -I$tree/include#g; s# -I$PWD/src# -I$tree/src#g" <<<"$cmd")
fi
extra=""
for a in "$@"; do extra+=" $(printf '%q' "$a")"; done
(cd "$BUILD" && eval "$cmd$extra -o $(printf '%q' "$obj")")
link=${link#: && }
link=${link% && :}
link=${link/ -o mlakit / -o variants\/$NAME\/mlakit }
link=${link/ libmlakit_kernels.a / $(printf '%q' "$obj") libmlakit_kernels.a }
(cd "$BUILD" && eval "$link")
printf '%s\n' "$*" >"$out/flags"
echo "variant_build: $out/mlakit (${SRC}${rev:+ at $rev}${*:+ with $*})"
