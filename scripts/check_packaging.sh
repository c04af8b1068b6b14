#!/usr/bin/env bash
# Packaging check from a clean export of the tracked tree (what a fresh clone holds: no .deps/, no
# build/), each path in a virtual environment of its own. Needs PyPI (the build requirements of
# pyproject.toml), nvcc and CMake; each build compiles the kernels once (~3-5 min on two cores).
#
#   scripts/check_packaging.sh [--all] [WORK_DIR]     (default: a temporary folder, removed)
#
# Always (CI):
#   build        `python -m build` in a plain venv: the sdist (its contents checked), then a wheel
#                built from the sdist alone (its contents checked: the extension, the stubs,
#                py.typed, LICENSE and THIRD_PARTY_NOTICES), installed and imported.
#   activated    `source venv/bin/activate && pip install .`: the path that failed with "No module
#                named pip" when the build downloaded its own headers.
# --all adds `pip install -e .`, `uv pip install .` and `pip install --no-build-isolation .` (the
# build requirements installed into the venv first).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
ALL=0
[ "${1:-}" = "--all" ] && { ALL=1; shift; }
WORK=${1:-}
if [ -z "$WORK" ]; then
  WORK=$(mktemp -d)
  trap 'rm -rf "$WORK"' EXIT
fi
say() { echo "[packaging] $*"; }
fail() { echo "[packaging] FAILED: $*" >&2; exit 1; }
timed() {  # label, log file, command...: runs it quietly, prints the time, the log's tail on failure
  local label=$1 log=$2 start
  shift 2
  start=$(date +%s)
  if ! "$@" </dev/null >"$log" 2>&1; then
    tail -n 40 "$log"
    fail "$label (log: $log)"
  fi
  say "$label: ok in $(( $(date +%s) - start )) s"
}

version=$(sed -n 's/^project(mlakit VERSION \([0-9][0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")
[ -n "$version" ] || fail "no 'project(mlakit VERSION x.y.z' line in CMakeLists.txt"

# A clean export of the tracked tree, as a user's fresh clone would be (no .deps/, no build/).
say "exporting the tracked tree"
mkdir -p "$WORK/src"
(cd "$ROOT" && git ls-files -z | tar --null --no-recursion -T - -cf -) | tar -xf - -C "$WORK/src"
[ ! -e "$WORK/src/.deps" ] || fail "the export holds .deps/"

# Imports mlakit with a venv's interpreter, outside the source tree; checks the version.
check_import() {  # label, python
  local got
  got=$(cd "$WORK" && "$2" -c "import mlakit; print(mlakit.__version__)") || fail "$1: import mlakit"
  [ "$got" = "$version" ] || fail "$1: mlakit.__version__ is '$got', CMakeLists.txt says '$version'"
  say "$1: import mlakit -> $got"
}

# --- python -m build: sdist, then a wheel from the sdist alone ---------------------------------
python3 -m venv "$WORK/venv-build"
PY="$WORK/venv-build/bin/python"
"$PY" -m pip install -q --disable-pip-version-check build </dev/null || fail "pip install build"
timed "python -m build (sdist, then the wheel from it)" "$WORK/build.log" \
  "$PY" -m build --outdir "$WORK/dist" "$WORK/src"
sdist="$WORK/dist/mlakit-$version.tar.gz"
[ -f "$sdist" ] || fail "expected $sdist, got: $(ls "$WORK/dist")"
listing=$(tar -tzf "$sdist")
for f in CMakeLists.txt pyproject.toml LICENSE THIRD_PARTY_NOTICES CHANGELOG.md scripts/bootstrap.sh \
         cmake/MlakitDeps.cmake python/mlakit/__init__.py python/mlakit/compat.py python/mlakit/_C.pyi \
         python/mlakit/py.typed include/mlakit/dsa.h examples/dsa_decode_step.py; do
  echo "$listing" | grep -qx "mlakit-$version/$f" || fail "the sdist lacks $f"
done
if echo "$listing" | grep -q "^mlakit-$version/\(\.deps\|build\)/"; then
  fail "the sdist carries .deps/ or build/"
fi
say "sdist ok: $(du -h "$sdist" | cut -f1), $(echo "$listing" | wc -l) entries, no .deps/"
wheel=$(ls "$WORK"/dist/mlakit-"$version"-*.whl 2>/dev/null | head -n 1)
[ -n "$wheel" ] || fail "no mlakit-$version wheel in $WORK/dist"
contents=$("$PY" -m zipfile -l "$wheel")
for f in mlakit/__init__.py mlakit/compat.py mlakit/flashinfer_bench.py "mlakit/_C." mlakit/_C.pyi \
         mlakit/_api.pyi mlakit/py.typed "mlakit-$version.dist-info/METADATA" \
         "mlakit-$version.dist-info/licenses/LICENSE" "mlakit-$version.dist-info/licenses/THIRD_PARTY_NOTICES"; do
  echo "$contents" | grep -q "$f" || fail "the wheel lacks $f"
done
for extra in torch plot; do
  unzip -p "$wheel" "mlakit-$version.dist-info/METADATA" | grep -q "^Provides-Extra: $extra$" ||
    fail "the wheel's metadata has no extra '$extra'"
done
say "wheel ok: $(basename "$wheel") ($(du -h "$wheel" | cut -f1)): extension, stubs, py.typed, licences, extras"
"$PY" -m pip install -q --no-deps --disable-pip-version-check "$wheel" </dev/null || fail "installing the wheel"
check_import "python -m build" "$PY"

# --- an activated venv: pip install . ------------------------------------------------------------
python3 -m venv "$WORK/venv-activated"
activated_install() {  # runs inside the activated venv, as a user types it
  # shellcheck disable=SC1091
  source "$WORK/venv-activated/bin/activate"
  cd "$WORK/src"
  pip install --disable-pip-version-check "$@" .
}
timed "activated venv: pip install ." "$WORK/activated.log" activated_install
check_import "activated venv" "$WORK/venv-activated/bin/python"

[ "$ALL" = 1 ] || { say "ok: python -m build (sdist -> wheel -> import) and pip install . in an activated venv"; exit 0; }

# --- --all: editable, uv, no build isolation ----------------------------------------------------
python3 -m venv "$WORK/venv-editable"
timed "pip install -e ." "$WORK/editable.log" \
  "$WORK/venv-editable/bin/python" -m pip install --disable-pip-version-check -e "$WORK/src"
check_import "pip install -e ." "$WORK/venv-editable/bin/python"

python3 -m venv "$WORK/venv-uv"
"$WORK/venv-uv/bin/python" -m pip install -q --disable-pip-version-check uv </dev/null || fail "pip install uv"
timed "uv pip install ." "$WORK/uv.log" \
  "$WORK/venv-uv/bin/uv" pip install --python "$WORK/venv-uv/bin/python" "$WORK/src"
check_import "uv pip install ." "$WORK/venv-uv/bin/python"

python3 -m venv "$WORK/venv-noiso"
requires=$("$WORK/venv-noiso/bin/python" - "$WORK/src/pyproject.toml" <<'PY'
import sys, tomllib
print("\n".join(tomllib.load(open(sys.argv[1], "rb"))["build-system"]["requires"]))
PY
)
mapfile -t reqs <<<"$requires"
"$WORK/venv-noiso/bin/python" -m pip install -q --disable-pip-version-check "${reqs[@]}" </dev/null ||
  fail "installing the build requirements"
timed "pip install --no-build-isolation ." "$WORK/noiso.log" \
  "$WORK/venv-noiso/bin/python" -m pip install --disable-pip-version-check --no-build-isolation "$WORK/src"
check_import "--no-build-isolation" "$WORK/venv-noiso/bin/python"
say "ok: every path"
