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
# translation unit from it and never pulls the library's own copy: the rule of the CMake target
# mlakit_ring_diag (CMakeLists.txt), whose three fixed diagnosis builds stay there; this script is
# for the variants an experiment names on the spot. The build must be built (make
# build): its objects and libraries are linked as they are. The variant binary says nothing of
# itself when it runs: name it, and keep the flags with the figures (devlog).
set -euo pipefail
cd "$(dirname "$0")/.."
TU_TOOL=variant_build
source scripts/tu_common.sh
tu_args "$@"
set -- "${TU_ARGS[@]}"
rev=$TU_REV
[ $# -ge 3 ] || tu_usage "scripts/variant_build.sh [--rev REV] BUILD_DIR NAME SOURCE.cu [EXTRA NVCC ARGS ...]"
BUILD=$1 NAME=$2 SRC=$3
shift 3
[[ "$NAME" =~ ^[A-Za-z0-9_-]+$ ]] || tu_fail "NAME may hold letters, digits, '-' and '_' only; got '$NAME'"
[ -f "$BUILD/build.ninja" ] || tu_fail "BUILD_DIR: $BUILD/build.ninja not found (make build first)"
[ -x "$BUILD/mlakit" ] || tu_fail "BUILD_DIR: $BUILD/mlakit not built (make build first)"
tu_nvcc_line "$BUILD" "$SRC"
link=$(ninja -C "$BUILD" -t commands mlakit 2>/dev/null | tail -1)
grep -q -- " -o mlakit " <<<"$link" && grep -q " libmlakit_kernels.a " <<<"$link" ||
  tu_fail "BUILD_DIR: the link line of mlakit is not the expected one"
[ -z "$rev" ] || tu_at_rev "$rev"
out="$BUILD/variants/$NAME"
mkdir -p "$out"
obj="$(realpath "$out")/$(basename "$SRC").o"
(cd "$BUILD" && eval "$TU_CMD$(tu_quote "$@") -o $(printf '%q' "$obj")")
link=${link#: && }
link=${link% && :}
link=${link/ -o mlakit / -o variants\/$NAME\/mlakit }
link=${link/ libmlakit_kernels.a / $(printf '%q' "$obj") libmlakit_kernels.a }
(cd "$BUILD" && eval "$link")
printf '%s\n' "$*" >"$out/flags"
echo "variant_build: $out/mlakit (${SRC}${rev:+ at $rev}${*:+ with $*})"
