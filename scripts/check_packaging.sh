#!/usr/bin/env bash
# Packaging check (CI): the sdist carries what a build needs but not .deps/, a wheel builds from
# the sdist alone (its configure bootstraps CUTLASS from PyPI), installs, and imports with the
# version of CMakeLists.txt. Needs PyPI (build isolation fetches scikit-build-core and nanobind),
# nvcc and CMake; takes a few minutes (the kernels compile once more).
#   scripts/check_packaging.sh [WORK_DIR]     (default: a temporary folder, removed at the end)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WORK=${1:-}
if [ -z "$WORK" ]; then
  WORK=$(mktemp -d)
  trap 'rm -rf "$WORK"' EXIT
fi
say() { echo "[packaging] $*"; }
fail() { echo "[packaging] FAILED: $*" >&2; exit 1; }

version=$(sed -n 's/^project(mlakit VERSION \([0-9][0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")
[ -n "$version" ] || fail "no 'project(mlakit VERSION x.y.z' line in CMakeLists.txt"

python3 -m venv "$WORK/venv"
PY="$WORK/venv/bin/python"
"$PY" -m pip install -q --disable-pip-version-check build </dev/null || fail "pip install build"

# A clean export of the tracked tree, as a user's fresh clone would be (no .deps/, no build/).
say "exporting the tracked tree"
mkdir -p "$WORK/src"
(cd "$ROOT" && git ls-files -z | tar --null --no-recursion -T - -cf -) | tar -xf - -C "$WORK/src"
[ ! -e "$WORK/src/.deps" ] || fail "the export holds .deps/"

say "python -m build --sdist"
"$PY" -m build --sdist --outdir "$WORK/dist" "$WORK/src" </dev/null >"$WORK/sdist.log" 2>&1 ||
  { tail -n 30 "$WORK/sdist.log"; fail "building the sdist"; }
sdist="$WORK/dist/mlakit-$version.tar.gz"
[ -f "$sdist" ] || fail "expected $sdist, got: $(ls "$WORK/dist")"
listing=$(tar -tzf "$sdist")
for f in CMakeLists.txt pyproject.toml LICENSE CHANGELOG.md scripts/bootstrap.sh cmake/MlakitDeps.cmake \
         python/mlakit/__init__.py python/mlakit/compat.py include/mlakit/dsa.h; do
  echo "$listing" | grep -qx "mlakit-$version/$f" || fail "the sdist lacks $f"
done
if echo "$listing" | grep -q "^mlakit-$version/\(\.deps\|build\)/"; then
  fail "the sdist carries .deps/ or build/"
fi
say "sdist ok: $(du -h "$sdist" | cut -f1), $(echo "$listing" | wc -l) entries, no .deps/"

say "a wheel from the sdist alone (configure bootstraps CUTLASS; the kernels compile)"
"$PY" -m pip wheel -q --no-deps --disable-pip-version-check "$sdist" -w "$WORK/wheel" </dev/null \
  >"$WORK/wheel.log" 2>&1 || { tail -n 40 "$WORK/wheel.log"; fail "building a wheel from the sdist"; }
wheel=$(ls "$WORK"/wheel/mlakit-"$version"-*.whl 2>/dev/null | head -n 1)
[ -n "$wheel" ] || fail "no mlakit-$version wheel in $WORK/wheel"
contents=$("$PY" -m zipfile -l "$wheel")
for f in mlakit/__init__.py mlakit/compat.py mlakit/flashinfer_bench.py "mlakit/_C." \
         "mlakit-$version.dist-info/METADATA"; do
  echo "$contents" | grep -q "$f" || fail "the wheel lacks $f"
done

say "installing the wheel and importing it"
"$PY" -m pip install -q --no-deps --disable-pip-version-check --target "$WORK/site" "$wheel" </dev/null
got=$(cd "$WORK" && PYTHONPATH="$WORK/site" "$PY" -c "import mlakit; print(mlakit.__version__)") ||
  fail "import mlakit from the installed wheel"
[ "$got" = "$version" ] || fail "mlakit.__version__ is '$got', CMakeLists.txt says '$version'"
say "ok: sdist -> $(basename "$wheel") -> import mlakit $got"
