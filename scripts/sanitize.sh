#!/usr/bin/env bash
# compute-sanitizer memcheck, racecheck, initcheck and synccheck over small shapes that cover every
# code path of the DSA kernels: split + merge, fused epilogue, one stage, empty rows, page size 1.
set -uo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/.."
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if [ -z "$SAN" ]; then
  echo "[sanitize] compute-sanitizer not found (it ships with the CUDA toolkit); nothing run"
  exit 1
fi
if ! ./"$BUILD"/mlakit list | grep -q "runnable on"; then
  echo "[sanitize] no runnable sm_90a device here; nothing to sanitize"
  exit 0
fi
shapes=(
  "--t 3 --topk 512 --num-pages 64 --valid 300 --tiling s4n64x2m4"
  "--t 2 --topk 256 --num-pages 64 --tiling s1n64x1m4"
  "--t 2 --topk 2048 --num-pages 128 --tiling s1n64x2m4"
  "--t 2 --topk 256 --num-pages 64 --valid 0 --tiling s4n64x2m8"
  "--t 2 --topk 256 --page-size 1 --num-pages 2048 --valid 100 --tiling s2n64x2m16"
)
fail=0
for tool in memcheck racecheck initcheck synccheck; do
  for shape in "${shapes[@]}"; do
    if "$SAN" --tool "$tool" --error-exitcode 99 ./"$BUILD"/mlakit run $shape --check --no-time >/tmp/mlakit_san.log 2>&1; then
      echo "[sanitize] $tool clean: $shape"
    else
      echo "[sanitize] $tool FAILED: $shape"; tail -n 30 /tmp/mlakit_san.log; fail=1
    fi
  done
done
[ $fail -eq 0 ] && echo "[sanitize] all clean" || echo "[sanitize] problems found"
exit $fail
