#!/usr/bin/env bash
# Fills .deps/ with what the build needs and is missing; never touches what is already there.
# Every part is a pinned file (version and sha256) from PyPI or a Debian pool file fetched by URL
# and unpacked here (no apt, no dpkg): it works on any Linux with python3 and network access.
#
#   .deps/cutlass/include/{cute,cutlass}   CUTLASS/CuTe C++ headers, from the nvidia-cutlass wheel
#   .deps/googletest/                      GoogleTest sources (built by our CMake), Debian googletest .deb
#   .deps/python/nanobind/                 nanobind (only when python3 cannot import it)
#   .deps/python/pytest/                   pytest and its dependencies, pinned (likewise)
#   .deps/cli11/include/CLI/               CLI11 headers, Debian libcli11-dev .deb
#   .deps/nlohmann_json/include/nlohmann/  nlohmann/json headers, from the nlohmann-json wheel
#   .deps/nvml/include/nvml.h              NVML's header, from the nvidia-nvml-dev wheel
#   .deps/nvdisasm/bin/nvdisasm            (only when named) the SASS disassembler of
#                                          scripts/scan_sass.sh, from the nvidia-cuda-nvdisasm wheel
#
# CLI11 (the CLI's arguments), nlohmann/json (every JSON file) and nvml.h (the NVML loader's
# declarations) are exposed to CMake as mlakit::cli11, mlakit::nlohmann_json, mlakit::nvml_headers.
# The Python build (`pip install .`) does not run this script: pyproject.toml names the same wheels
# as build requirements (tests/python/test_build_setup.py checks that the pins agree).
#
#   scripts/bootstrap.sh                   everything above
#   scripts/bootstrap.sh cutlass ...       only the named parts (cutlass googletest nanobind pytest
#                                          cli11 nlohmann_json nvml, or the optional nvdisasm); what CMake runs when a
#                                          configure of `make` finds .deps/ lacking a part
#
# MLAKIT_DEBIAN_MIRROR (default http://deb.debian.org/debian) is where the two .deb files are
# fetched from (pool/...); any Debian mirror, archive.debian.org or snapshot.debian.org serves them.
# A machine without network (the GPU machine) must receive a filled .deps/ with the tree.
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
# Debian pool files (architecture "all": sources and headers), fetched by URL, checked, unpacked.
DEBIAN_MIRROR=${MLAKIT_DEBIAN_MIRROR:-http://deb.debian.org/debian}
CLI11_VERSION=2.1.2
CLI11_DEB=pool/main/c/cli11/libcli11-dev_2.1.2+ds-1_all.deb
CLI11_SHA256=f1f6ee9ec053e0e0bcec47345e241b6a8ee006321248b4329e9ce88d2b4b64a8
GOOGLETEST_VERSION=1.12.1
GOOGLETEST_DEB=pool/main/g/googletest/googletest_1.12.1-0.2_all.deb
GOOGLETEST_SHA256=927be72067517da503b6538026d451455c9e860f5dbfe237f792543db7d5a928
# nlohmann/json's headers as a wheel (the same files as the release's include/ folder).
JSON_VERSION=3.11.2
JSON_WHEEL=nlohmann_json-${JSON_VERSION}-py3-none-any.whl
JSON_SHA256=e287e726ba1cf04d8f16bc0a77c05a194bab580cdaa85bf7117f82e3434ab1ec
# pytest and its dependencies, each pinned (installed with --no-deps; the last two only below 3.11).
PYTEST_PINS=(pytest==8.3.5 pluggy==1.5.0 iniconfig==2.1.0 packaging==25.0
             "exceptiongroup==1.2.2; python_version < '3.11'" "tomli==2.2.1; python_version < '3.11'")
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
no_registry_hint="On a machine without network, run 'make deps' where PyPI and a Debian mirror are reachable and copy the .deps/ folder along with the tree."

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

# Fetches one pinned Debian pool file by URL, checks its sha256 and unpacks the folder `keep` of its
# data archive into $3 (no apt, no dpkg: a .deb is an ar archive holding data.tar.xz).
fetch_deb() {  # pool path, sha256, dest dir, folder inside the package (e.g. usr/include/CLI)
  local pool=$1 sha=$2 dest=$3 keep=$4
  python3 - "$DEBIAN_MIRROR/$pool" "$sha" "$dest" "$keep" <<'PY'
import hashlib, io, sys, tarfile, urllib.parse, urllib.request
url, sha, dest, keep = sys.argv[1:5]
quoted = url.split("://", 1)[0] + "://" + urllib.parse.quote(url.split("://", 1)[1])
try:
    with urllib.request.urlopen(quoted, timeout=120) as r:
        data = r.read()
except OSError as e:
    sys.exit(f"[bootstrap] could not download {url}: {e} (set MLAKIT_DEBIAN_MIRROR to another mirror)")
if hashlib.sha256(data).hexdigest() != sha:
    sys.exit(f"[bootstrap] sha256 of {url} does not match the pinned {sha}; refusing to use it")
if not data.startswith(b"!<arch>\n"):
    sys.exit(f"[bootstrap] {url} is not a .deb (ar) archive")
pos, payload = 8, None
while pos + 60 <= len(data):
    name, size = data[pos:pos + 16].strip().decode(), int(data[pos + 48:pos + 58])
    if name.rstrip("/").startswith("data.tar"):
        payload = data[pos + 60:pos + 60 + size]
        break
    pos += 60 + size + (size & 1)
if payload is None:
    sys.exit(f"[bootstrap] {url} holds no data.tar member")
with tarfile.open(fileobj=io.BytesIO(payload), mode="r:*") as t:
    members = [m for m in t.getmembers() if m.name.lstrip("./").startswith(keep + "/")]
    if not members:
        sys.exit(f"[bootstrap] {url} holds nothing under {keep}/")
    t.extractall(dest, members)
PY
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
  say "fetching GoogleTest sources ($GOOGLETEST_VERSION, $GOOGLETEST_DEB)"
  local tmp
  tmp=$(mktemp -d)
  fetch_deb "$GOOGLETEST_DEB" "$GOOGLETEST_SHA256" "$tmp" usr/src/googletest ||
    { rm -rf "$tmp"; fail "GoogleTest sources could not be fetched (message above)." "$no_registry_hint"; }
  rm -rf "$DEPS/googletest"
  mv "$tmp/usr/src/googletest" "$DEPS/googletest"
  echo "$GOOGLETEST_VERSION" >"$DEPS/googletest/VERSION"
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
  say "fetching ${PYTEST_PINS[0]} for the Python tests"
  if ! python3 -m pip install -q --no-deps --target "$DEPS/python" "${PYTEST_PINS[@]}" </dev/null >/dev/null 2>&1; then
    say "warning: pytest is not importable and could not be fetched; the Python tests will not run."
  fi
}

fetch_cli11() {
  [ -f "$DEPS/cli11/include/CLI/CLI.hpp" ] && return 0
  say "fetching CLI11 headers ($CLI11_VERSION, $CLI11_DEB)"
  local tmp
  tmp=$(mktemp -d)
  fetch_deb "$CLI11_DEB" "$CLI11_SHA256" "$tmp" usr/include/CLI ||
    { rm -rf "$tmp"; fail "CLI11 headers could not be fetched (message above)." "$no_registry_hint"; }
  rm -rf "$DEPS/cli11"
  mkdir -p "$DEPS/cli11/include"
  mv "$tmp/usr/include/CLI" "$DEPS/cli11/include/CLI"
  echo "$CLI11_VERSION" >"$DEPS/cli11/VERSION"
  rm -rf "$tmp"
}

fetch_nlohmann_json() {
  [ -f "$DEPS/nlohmann_json/include/nlohmann/json.hpp" ] && return 0
  say "fetching nlohmann/json headers (nlohmann-json==$JSON_VERSION)"
  local tmp
  tmp=$(mktemp -d)
  download_wheel "nlohmann-json==$JSON_VERSION" "$tmp" "$JSON_WHEEL" "$JSON_SHA256" ||
    { rm -rf "$tmp"; fail "nlohmann/json headers could not be fetched (message above)." "$no_registry_hint"; }
  python3 - "$tmp/$JSON_WHEEL" "$tmp/x" <<'PY'
import sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.startswith("nlohmann_json/include/nlohmann/")]
    if not names:
        sys.exit("the wheel carries no headers under nlohmann_json/include/nlohmann/")
    z.extractall(dest, names)
PY
  rm -rf "$DEPS/nlohmann_json"
  mkdir -p "$DEPS/nlohmann_json/include"
  mv "$tmp/x/nlohmann_json/include/nlohmann" "$DEPS/nlohmann_json/include/nlohmann"
  echo "$JSON_VERSION" >"$DEPS/nlohmann_json/VERSION"
  rm -rf "$tmp"
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
