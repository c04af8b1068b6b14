#!/usr/bin/env bash
# Compiles one CUDA translation unit of a build to a cubin with the build's own nvcc command line
# (its flags, includes and defines), for lab/scripts/sass_diff.py. No GPU needed.
#
#   lab/scripts/cubin_of.sh [--rev REV] BUILD_DIR SOURCE.cu OUT.cubin [EXTRA NVCC ARGS ...]
#
# EXTRA: flags added to the build's line, such as -DMLAKIT_TIMELINE or a variant's -D. --rev REV
# compiles the sources of git revision REV instead of the working tree's (a temporary worktree,
# removed after; the build's generated headers are used as they are). The build directory must be
# configured (make configure) and hold SOURCE.cu among its targets.
set -euo pipefail
cd "$(dirname "$0")/../.."
TU_TOOL=cubin_of
source lab/scripts/tu_unit.sh
tu_args "$@"
set -- "${TU_ARGS[@]}"
rev=$TU_REV
[ $# -ge 3 ] || tu_usage "lab/scripts/cubin_of.sh [--rev REV] BUILD_DIR SOURCE.cu OUT.cubin [EXTRA NVCC ARGS ...]"
BUILD=$1 SRC=$2 OUTFILE=$3
shift 3
tu_nvcc_line "$BUILD" "$SRC"
case "$OUTFILE" in /*) ;; *) OUTFILE="$PWD/$OUTFILE" ;; esac
[ -z "$rev" ] || tu_at_rev "$rev"
(cd "$BUILD" && eval "${TU_CMD/ -c / }$(tu_quote "$@") -cubin -o $(printf '%q' "$OUTFILE")")  # the source stays
echo "cubin_of: $OUTFILE${rev:+ (sources of $rev = ${TU_REV_ID:-?})}"
