#!/usr/bin/env bash
# Builds a variant of the mlakit CLI in which one CUDA translation unit is compiled again with extra
# nvcc flags (an idea behind a -D) or from a git revision's sources, everything else
# taken from the build as it is. For A/B timing (lab/scripts/ab_bench.py) of an idea before it is
# written as the code: ~10-40 s per variant on two cores, against a build directory per variant.
#
#   lab/scripts/variant_build.sh [--rev REV] BUILD_DIR NAME SOURCE.cu[,SOURCE.cu ...] [EXTRA NVCC ARGS ...]
#
# Writes BUILD_DIR/variants/NAME/mlakit (and the translation units' objects beside it) and prints its
# path alone on stdout (what was built goes to stderr). Several units, comma-separated, are each
# compiled with the same extra arguments (a define read by headers that two launchers include).
# The objects are linked ahead of the build's libraries, so the linker takes every symbol of those
# units from them and never pulls the library's own copies. The build must be built (make build):
# its objects and libraries are linked as they are. The variant binary says nothing of
# itself when it runs: name it, and keep the flags with the figures (devlog).
set -euo pipefail
cd "$(dirname "$0")/../.."
TU_TOOL=variant_build
source lab/scripts/tu_unit.sh
tu_args "$@"
set -- "${TU_ARGS[@]}"
rev=$TU_REV
usage="lab/scripts/variant_build.sh [--rev REV] BUILD_DIR NAME SOURCE.cu[,SOURCE.cu ...] [EXTRA NVCC ARGS ...]"
[ $# -ge 3 ] || tu_usage "$usage"
BUILD=$1 NAME=$2 SRC=$3
shift 3
[[ "$NAME" =~ ^[A-Za-z0-9_-]+$ ]] || tu_fail "NAME may hold letters, digits, '-' and '_' only; got '$NAME'"
[ -f "$BUILD/build.ninja" ] || tu_fail "BUILD_DIR: $BUILD/build.ninja not found (make build first)"
[ -x "$BUILD/mlakit" ] || tu_fail "BUILD_DIR: $BUILD/mlakit not built (make build first)"
IFS=, read -r -a srcs <<<"$SRC"
[ ${#srcs[@]} -ge 1 ] || tu_usage "$usage"
declare -A seen=()
units=() cmds=()  # every unit's absolute path and nvcc line, all checked before anything is compiled
for src in "${srcs[@]}"; do
  [ -n "$src" ] || tu_fail "SOURCE: an empty name in '$SRC'"
  [ -z "${seen[$(basename "$src")]:-}" ] || tu_fail "SOURCE: two units named $(basename "$src") in '$SRC'"
  seen[$(basename "$src")]=1
  tu_nvcc_line "$BUILD" "$src"
  units+=("$TU_SRC") cmds+=("$TU_CMD")
done
link=$(ninja -C "$BUILD" -t commands mlakit 2>/dev/null | tail -1)
grep -q -- " -o mlakit " <<<"$link" && grep -q " libmlakit_kernels.a " <<<"$link" ||
  tu_fail "BUILD_DIR: the link line of mlakit is not the expected one"
out="$BUILD/variants/$NAME"
mkdir -p "$out"
objs=""
for i in "${!units[@]}"; do
  TU_SRC=${units[$i]} TU_CMD=${cmds[$i]}
  [ -z "$rev" ] || tu_at_rev "$rev"
  obj="$(realpath "$out")/$(basename "$TU_SRC").o"
  (cd "$BUILD" && eval "$TU_CMD$(tu_quote "$@") -o $(printf '%q' "$obj")")
  objs+="$(printf '%q' "$obj") "
done
link=${link#: && }
link=${link% && :}
link=${link/ -o mlakit / -o variants\/$NAME\/mlakit }
link=${link/ libmlakit_kernels.a / ${objs}libmlakit_kernels.a }
(cd "$BUILD" && eval "$link")
printf '%s\n' "$*" >"$out/flags"
# The path alone on stdout (B=$(lab/scripts/variant_build.sh ...) takes it), what was built on stderr.
echo "variant_build: $out/mlakit (${SRC}${rev:+ at $rev = ${TU_REV_ID:-?}}${*:+ with $*})" >&2
echo "$out/mlakit"
