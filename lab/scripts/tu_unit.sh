# Sourced by lab/scripts/cubin_of.sh and lab/scripts/variant_build.sh: one CUDA translation unit's
# nvcc line taken from a configured build (scripts/tu_common.sh), optionally reading the sources of
# a git revision. The caller sets TU_TOOL (its name, for messages) and runs from the repository
# root under `set -euo pipefail`.
source scripts/tu_common.sh

tu_fail() {
  echo "$TU_TOOL: error: $*" >&2
  exit 2
}

# tu_args ARGS...: a leading `--rev REV` taken off into TU_REV ("" without it), the rest in TU_ARGS.
tu_args() {
  TU_REV=""
  if [ "${1:-}" = "--rev" ]; then
    [ $# -ge 2 ] || tu_fail "--rev needs a revision"
    TU_REV=$2
    shift 2
  fi
  TU_ARGS=("$@")
}

# tu_usage LINE: the usage line on stderr, exit status 2.
tu_usage() {
  echo "usage: $1" >&2
  exit 2
}

# tu_nvcc_line BUILD_DIR SOURCE: sets TU_SRC (the source's absolute path) and TU_CMD (the build's
# nvcc line for it without its dependency-file and output options; `-c SOURCE` kept).
tu_nvcc_line() {
  [ -f "$1/build.ninja" ] || tu_fail "BUILD_DIR: $1/build.ninja not found (make configure first)"
  [ -f "$2" ] || tu_fail "SOURCE: $2 not found"
  TU_SRC=$(realpath "$2")
  local line
  line=$(tu_nvcc_lines "$1" | grep -F -- " -c $TU_SRC " | head -1 || true)
  [ -n "$line" ] || tu_fail "SOURCE: no nvcc compile line for $TU_SRC in $1"
  TU_CMD=$(tu_bare "$line")
}

# tu_at_rev REV: TU_CMD reads the unit and the project's own headers from a temporary worktree of
# REV (removed when the script exits; made once, so several units of one call share it);
# third-party headers under .deps/ and the build's generated ones stay as they are. TU_REV_ID is
# the commit REV names here ("HEAD" is this checkout's, which a copied tree may not have moved):
# the scripts print it beside REV.
tu_at_rev() {
  if [ -z "${TU_TREE:-}" ]; then
    git rev-parse --verify --quiet "$1^{commit}" >/dev/null || tu_fail "--rev: '$1' is not a commit"
    TU_REV_ID=$(git rev-parse --short "$1^{commit}")
    TU_TREE=$(mktemp -d)
    trap 'git worktree remove --force "$TU_TREE" >/dev/null 2>&1 || rm -rf "$TU_TREE"' EXIT
    git worktree add --detach --quiet "$TU_TREE" "$1"
  fi
  [ -f "$TU_TREE/${TU_SRC#"$PWD"/}" ] || tu_fail "SOURCE: ${TU_SRC#"$PWD"/} does not exist at $1"
  TU_CMD=$(sed -E -e "s# $PWD/src/# $TU_TREE/src/#g; s# -I$PWD/include# -I$TU_TREE/include#g; s# -I$PWD/src# -I$TU_TREE/src#g" <<<"$TU_CMD")
}

# tu_quote ARGS...: the arguments as one shell-quoted string (for eval), each with a leading space.
tu_quote() {
  local out="" a
  for a in "$@"; do out+=" $(printf '%q' "$a")"; done
  printf '%s' "$out"
}
