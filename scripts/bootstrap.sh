#!/usr/bin/env bash
# Fills .deps/ with what the build needs and is missing; never touches what is already there.
#
#   .deps/cutlass/include/{cute,cutlass}   CUTLASS/CuTe C++ headers, from the pinned nvidia-cutlass wheel
#   .deps/googletest/                      GoogleTest sources (built by our CMake; the H200 has none)
#   .deps/python/nanobind/                 nanobind (only when python3 cannot import it)
#   .deps/python/pytest/                   pytest for the binding's tests (likewise)
#
# A machine without a registry (the GPU machine) must receive a filled .deps/ with the tree.
set -euo pipefail
cd "$(dirname "$0")/.."
DEPS=.deps
mkdir -p "$DEPS"

CUTLASS_VERSION=4.2.0.0
CUTLASS_WHEEL=nvidia_cutlass-${CUTLASS_VERSION}-py3-none-any.whl
CUTLASS_SHA256=f9599ada45c7bcb6bf53f7d3f0a7d154183e53451c01bfa59eecd37dd4a693f6
NANOBIND_VERSION=3.1.0

say() { echo "[bootstrap] $*"; }
fail() {
  echo "[bootstrap] error: $1" >&2
  echo "[bootstrap] $2" >&2
  exit 1
}
no_registry_hint="On a machine without a package registry, run 'make deps' where PyPI and Debian are reachable and copy the .deps/ folder along with the tree."

fetch_cutlass() {
  [ -f "$DEPS/cutlass/include/cute/tensor.hpp" ] && [ -f "$DEPS/cutlass/include/cutlass/cutlass.h" ] && return 0
  say "fetching CUTLASS/CuTe headers (nvidia-cutlass==$CUTLASS_VERSION)"
  local tmp
  tmp=$(mktemp -d)
  if ! python3 -m pip download -q --no-deps --only-binary=:all: "nvidia-cutlass==$CUTLASS_VERSION" -d "$tmp" </dev/null >"$tmp/pip.log" 2>&1; then
    cat "$tmp/pip.log" >&2
    fail "could not download nvidia-cutlass==$CUTLASS_VERSION from PyPI." "$no_registry_hint"
  fi
  echo "$CUTLASS_SHA256  $tmp/$CUTLASS_WHEEL" | sha256sum -c --quiet - ||
    fail "sha256 of $CUTLASS_WHEEL does not match the pinned $CUTLASS_SHA256." "Refusing to use it; check the pin in scripts/bootstrap.sh."
  python3 - "$tmp/$CUTLASS_WHEEL" "$tmp/x" <<'PY'
import sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
prefix = "cutlass_library/source/include/"
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.startswith(prefix + "cute/") or n.startswith(prefix + "cutlass/")]
    if not names:
        sys.exit("the wheel carries no CUTLASS headers under " + prefix)
    z.extractall(dest, names)
PY
  rm -rf "$DEPS/cutlass"
  mkdir -p "$DEPS/cutlass"
  mv "$tmp/x/cutlass_library/source/include" "$DEPS/cutlass/include"
  echo "$CUTLASS_VERSION" >"$DEPS/cutlass/VERSION"
  rm -rf "$tmp"
}

fetch_googletest() {
  [ -f "$DEPS/googletest/CMakeLists.txt" ] && return 0
  if [ -f /usr/src/googletest/CMakeLists.txt ]; then
    say "copying GoogleTest sources from /usr/src/googletest"
    cp -r /usr/src/googletest "$DEPS/googletest"
    return 0
  fi
  say "fetching GoogleTest sources (Debian package googletest)"
  local tmp
  tmp=$(mktemp -d)
  if ! (cd "$tmp" && apt-get download googletest </dev/null >/dev/null 2>&1); then
    command -v apt-get >/dev/null && [ "$(id -u)" = 0 ] && apt-get update -qq </dev/null >/dev/null 2>&1 || true
    (cd "$tmp" && apt-get download googletest </dev/null >/dev/null 2>&1) ||
      fail "GoogleTest sources not found (/usr/src/googletest) and 'apt-get download googletest' failed." "$no_registry_hint"
  fi
  dpkg -x "$tmp"/googletest_*.deb "$tmp/x"
  cp -r "$tmp/x/usr/src/googletest" "$DEPS/googletest"
  rm -rf "$tmp"
}

fetch_nanobind() {
  python3 -c "import nanobind" 2>/dev/null && return 0
  [ -d "$DEPS/python/nanobind" ] && return 0
  say "fetching nanobind==$NANOBIND_VERSION for the Python binding"
  if ! python3 -m pip install -q --no-deps --target "$DEPS/python" "nanobind==$NANOBIND_VERSION" </dev/null >/dev/null 2>&1; then
    say "warning: nanobind is not importable and could not be fetched; the Python binding will not be built."
  fi
}

fetch_pytest() {
  python3 -c "import pytest" 2>/dev/null && return 0
  [ -d "$DEPS/python/pytest" ] && return 0
  say "fetching pytest for the binding's tests"
  if ! python3 -m pip install -q --target "$DEPS/python" pytest </dev/null >/dev/null 2>&1; then
    say "warning: pytest is not importable and could not be fetched; the Python tests will not run."
  fi
}

fetch_cutlass
fetch_googletest
fetch_nanobind
fetch_pytest
