#!/usr/bin/env bash
# Scans the SASS of every CUDA translation unit of a build for instruction forms that compile but
# fault at run time. Needs no GPU: each kernel .cu is compiled again to a cubin with the build's own
# nvcc command line and disassembled by nvdisasm (the pinned PyPI wheel, fetched into .deps/ by
# `scripts/bootstrap.sh nvdisasm`).
#
#   scripts/scan_sass.sh [BUILD_DIR]      (make scan-sass; default build/)
#
# Checks:
#   odd-descriptor   a memory descriptor in an odd uniform register (desc[UR1], desc[UR3], ...).
#                    Every descriptor is a 64-bit pair; ptxas 13.0 once allocated the cache-policy
#                    descriptor of a `cp.async ... L2::cache_hint` to UR1, and the copy faulted with
#                    "an illegal instruction was encountered" on every launch
#                    (docs/knowledge/codegen.md).
#   local-memory     LDL / STL in a kernel (spills, or an array indexed at run time) beyond its
#                    allowance in scripts/sass_local_memory.txt; a kernel not listed there must have
#                    none (scripts/sass_local_memory.py; devlog step 43 of dsa_decode v2_fused: a row
#                    loop not unrolled put the producer's slots in local memory).
# Prints one line per translation unit and "[scan-sass] clean" or the offending instructions, and
# exits 1 on a finding.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/tu_common.sh
BUILD=${1:-build}
[ -f "$BUILD/build.ninja" ] || { echo "[scan-sass] error: $BUILD/build.ninja not found (configure the build first: make configure)" >&2; exit 2; }
[ -x .deps/nvdisasm/bin/nvdisasm ] || bash scripts/bootstrap.sh nvdisasm
NVDISASM=.deps/nvdisasm/bin/nvdisasm
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

# The nvcc compile lines of the build's .cu files, object output turned into a cubin.
tu_nvcc_lines "$BUILD" >"$OUT/commands"
[ -s "$OUT/commands" ] || { echo "[scan-sass] error: no nvcc compile lines in $BUILD" >&2; exit 2; }
i=0
while IFS= read -r line; do
  i=$((i + 1))
  src=$(grep -oE ' -c [^ ]+' <<<"$line" | cut -c5-)
  cmd=$(tu_bare "$line")
  echo "${cmd/ -c / } -cubin -o $OUT/$i.cubin" >"$OUT/$i.sh"
  echo "$src" >"$OUT/$i.src"
done <"$OUT/commands"
if ! (cd "$BUILD" && ls "$OUT"/*.sh | xargs -P "$(nproc)" -I{} sh -c 'bash "$1" >"${1%.sh}.log" 2>&1' _ {}); then
  for log in "$OUT"/*.log; do [ -s "$log" ] && grep -q error "$log" && cat "$log" >&2; done
  echo "[scan-sass] error: a translation unit did not compile to a cubin (its log above)" >&2
  exit 2
fi

found=0
for cubin in "$OUT"/*.cubin; do
  n=${cubin%.cubin}
  src=$(cat "$n.src")
  "$NVDISASM" -c "$cubin" >"$n.sass"
  hits=$(grep -nE 'desc\[UR[0-9]*[13579]\]' "$n.sass" || true)
  if [ -n "$hits" ]; then
    found=1
    echo "[scan-sass] odd-descriptor in $src:"
    head -5 <<<"$hits" | sed 's/^/    /'
  else
    echo "[scan-sass] ok: ${src#"$PWD"/} ($(grep -c 'desc\[UR' "$n.sass") descriptors)"
  fi
done
python3 scripts/sass_local_memory.py scripts/sass_local_memory.txt "$OUT"/*.sass || {
  rc=$?
  [ "$rc" -eq 1 ] || { echo "[scan-sass] error: the local-memory check could not run (status $rc)" >&2; exit 2; }
  found=1
}
[ "$found" -eq 0 ] && echo "[scan-sass] clean" || exit 1
