#!/usr/bin/env bash
# compute-sanitizer memcheck, racecheck, initcheck and synccheck over small shapes that cover every
# code path of the DSA kernels (v1: split + merge kernel, fused epilogue, one stage; v2: rows split
# and merged in-kernel, one CTA per row, every gather, both MMA paths, 32..128 heads; the gather
# floor; empty rows, page size 1; v2_fp8 over the FP8 cache (16..128 heads, 16 or 64 per CTA) and
# its floor; mla_decode with 16 and 64 query rows per CTA (both 64-row consumer pairs): split and
# merged requests, requests kept whole, causal groups, page sizes, layouts), the GPU quantizer's
# tests, mixed-shape sequences (every workload of an edge suite in one process) under memcheck and
# initcheck, then the binding's CUDA-graph tests (capture, replay on new inputs) under memcheck and
# racecheck when PyTorch is there.
# MLAKIT_SANITIZE_ONLY=REGEX (bash regex) runs only the shapes it matches, and the mixed sequences,
# the quantizer tests or the graph tests only when it matches "mixed", "quantizer" or "graph": a
# change to one kernel family (say 'v2_fused|floor_gather|graph') is checked in part of the time;
# `make sanitize` runs all. The whole run prints 324 clean lines and takes over ten minutes on an
# H200; where one call is limited in time, two runs cover the same: MLAKIT_SANITIZE_ONLY=
# 'dsa_decode' (216 lines, ~360 s beside a ctest run), then 'mla_decode|quantizer|graph|mixed'
# (108 lines, ~480 s beside the rest of the tests).
# `scripts/sanitize.sh --can-run` (what `make sanitize` asks before it builds): exit 0 when
# compute-sanitizer and an NVIDIA GPU are there, else 1 after printing why nothing will run.
# Without either, `make sanitize` prints that reason and exits 0, like `make peers`.
set -uo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/.."
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if [ -z "$SAN" ]; then
  echo "[sanitize] skipped: compute-sanitizer not found (it ships with the CUDA toolkit); nothing run"
  [ "$BUILD" = "--can-run" ] && exit 1
  exit 0
fi
if [ "$BUILD" = "--can-run" ]; then
  if ! ls /dev/nvidia[0-9]* >/dev/null 2>&1 && ! nvidia-smi -L >/dev/null 2>&1; then
    echo "[sanitize] skipped: no NVIDIA GPU visible (no /dev/nvidia*, nvidia-smi finds none); nothing run"
    exit 1
  fi
  exit 0
fi
if ! ./"$BUILD"/mlakit list | grep -q "runnable on"; then
  echo "[sanitize] skipped: no runnable sm_90a device here; nothing to sanitize"
  exit 0
fi
# Nothing measured under a sanitizer may persist: the floors' timed calls would otherwise cache
# a copy ceiling and a tensor peak slowed by instrumentation (a 21 TFLOP/s "peak" was seen) for
# every later bench. The runs below get a cache directory of their own.
MLAKIT_CACHE_DIR=$(mktemp -d)
export MLAKIT_CACHE_DIR
trap 'rm -rf "$MLAKIT_CACHE_DIR"' EXIT
V1=dsa_decode.v1_splitk.bf16
V2=dsa_decode.v2_fused.bf16
FLOOR=dsa_decode.floor_gather.bf16
FP8=dsa_decode.v2_fp8.fp8
FP8_FLOOR=dsa_decode.floor_fp8.fp8
MLA=mla_decode.v1_paged.bf16
MLA_FLOOR=mla_decode.floor_stream.bf16
shapes=(
  # v1_splitk: split + PDL merge, one stage, fused epilogue, empty rows, page size 1
  "$V1 --t 3 --topk 512 --num-pages 64 --valid 300 --tiling s4n64x2m4"
  "$V1 --t 2 --topk 256 --num-pages 64 --tiling s1n64x1m4"
  "$V1 --t 2 --topk 2048 --num-pages 128 --tiling s1n64x2m4"
  "$V1 --t 2 --topk 256 --num-pages 64 --valid 0 --tiling s4n64x2m8"
  "$V1 --t 2 --topk 256 --page-size 1 --num-pages 2048 --valid 100 --tiling s2n64x2m16"
  # v2_fused: split rows merged in-kernel by the row's CTAs (default gather and pipe), one CTA
  # per row, empty rows, page size 1, both gathers, one producer warp
  "$V2 --t 3 --topk 512 --num-pages 64 --valid 300 --tiling s4n32x4m1p2"
  "$V2 --t 2 --topk 2048 --num-pages 128 --tiling s1n64x4m1p2"
  "$V2 --t 2 --topk 256 --num-pages 64 --valid 0 --tiling s4n64x4m1p2"
  "$V2 --t 2 --topk 256 --page-size 1 --num-pages 2048 --valid 100 --tiling s2n32x4m1p2"
  # four producer warps, two per stage (the 16-head default): split rows, a one-split row (the
  # staged output), partial stages; bulk rope rows
  "$V2 --t 3 --topk 512 --num-pages 64 --valid 300 --tiling s4n32x4m1p4"
  "$V2 --t 2 --topk 256 --num-pages 64 --valid 50 --tiling s1n64x4m1p4"
  "$V2 --t 3 --topk 512 --num-pages 64 --valid 300 --tiling s4n32x4m1p4g1"
  "$V2 --t 2 --topk 512 --num-pages 64 --valid 200 --tiling s4n32x3m1g1"
  "$V2 --t 2 --topk 512 --num-pages 64 --valid 200 --tiling s4n32x5m1g1"
  # launches of 2-4 splits per row take the merge twin (FewSplits: the hybrid mma.sync shapes with
  # s2-s4 above and the default at T = 40); more splits take the same instance's general merge
  "$V2 --t 40 --topk 512 --num-pages 64 --valid 300"
  "$V2 --t 2 --topk 1024 --num-pages 64 --valid 900 --tiling s16n32x4m1p4"
  # one CTA walking 32 stages: every ring buffer refilled many times (each gather)
  "$V2 --t 1 --topk 1024 --num-pages 64 --tiling s1n64x3m1"
  "$V2 --t 1 --topk 1024 --num-pages 64 --tiling s1n64x4m1p2"
  "$V2 --t 1 --topk 1024 --num-pages 64 --tiling s1n64x4m1p2g1"
  "$V2 --t 1 --topk 1024 --num-pages 64 --tiling s1n64x5m1g1"
  # 32, 64 and 128 heads (one CTA per 16 heads and split): split rows merged per head block,
  # one CTA per row, empty rows, the bulk gather
  "$V2 --t 2 --topk 512 --num-pages 64 --valid 300 --heads 32 --tiling s4n32x4m1p2"
  "$V2 --t 2 --topk 256 --num-pages 64 --valid 0 --heads 64 --tiling s2n64x4m1p2"
  "$V2 --t 1 --topk 512 --num-pages 64 --heads 128 --tiling s1n64x4m1p2"
  "$V2 --t 2 --topk 512 --num-pages 64 --valid 200 --heads 64 --tiling s4n32x4m1p2g1"
  # 32 heads per CTA (two consumer warpgroups on each tile): split and merged, one producer warp
  # walking many stages, empty rows
  "$V2 --t 2 --topk 512 --num-pages 64 --valid 300 --heads 64 --tiling s4n32x4m1p2h32"
  "$V2 --t 1 --topk 1024 --num-pages 64 --heads 32 --tiling s1n64x4m1h32"
  "$V2 --t 2 --topk 256 --num-pages 64 --valid 0 --heads 128 --tiling s2n64x4m1p2h32"
  # pooled rows (b1: every CTA plans all rows): split rows over their own CTAs merged at compact
  # partial indices, idle CTAs, a top-k that is not a multiple of 4 (4-byte copies, -1 past it),
  # 32 heads per CTA at 128 heads; one long row among short ones (--mixed): CTAs that short rows
  # leave donated to the long row (its Q copied over their own token's)
  "$V2 --t 6 --topk 512 --num-pages 64 --valid 300 --tiling s4n32x4m1p2b1"
  "$V2 --t 3 --topk 509 --num-pages 64 --valid 200 --tiling s2n64x4m1p2b1"
  "$V2 --t 5 --topk 1024 --num-pages 64 --valid 700 --heads 128 --tiling s4n64x4m1p2h32b1"
  "$V2 --t 6 --topk 512 --num-pages 64 --valid 500 --mixed --tiling s4n32x4m1p2b1"
  "$V2 --t 7 --topk 2048 --num-pages 128 --valid 2000 --mixed --heads 128 --tiling s4n64x4m1p2h32b1"
  # 64 heads per CTA (wgmma, heads = M): split and merged with one-stage tiles, one CTA walking
  # many stages (every ring buffer refilled), empty rows, two head groups per split
  "$V2 --t 2 --topk 512 --num-pages 64 --valid 300 --heads 64 --tiling s4n32x4m1p4g2w1h64"
  "$V2 --t 1 --topk 1024 --num-pages 64 --heads 64 --tiling s1n64x4m1p4g2w1h64"
  "$V2 --t 2 --topk 256 --num-pages 64 --valid 0 --heads 128 --tiling s2n64x4m1p4g2w1h64"
  "$V2 --t 2 --topk 512 --num-pages 64 --valid 200 --heads 128 --tiling s2n32x4m1p4g2w1h64"
  # the gather floor (nothing to check: one timed call): ring and register kernels
  "$FLOOR --t 2 --topk 512 --num-pages 64 --tiling s2n32x4m1p2"
  "$FLOOR --t 2 --topk 512 --num-pages 64 --valid 300 --tiling s2n32x4m1p4"
  "$FLOOR --t 2 --topk 512 --num-pages 64 --tiling s2n32x4m1g3"
  # v2_fp8 (FP8 cache): split rows merged in-kernel, one CTA per row over many stages (8 and 4
  # raw stages), empty rows, page size 1, 8 and 2 head groups; its floor
  "$FP8 --kv fp8 --t 3 --topk 512 --num-pages 64 --valid 300 --tiling s4n32x8m1p4g1"
  "$FP8 --kv fp8 --t 2 --topk 2048 --num-pages 128 --tiling s1n64x8m1p4g1"
  "$FP8 --kv fp8 --t 2 --topk 256 --num-pages 64 --valid 0 --tiling s4n64x8m1p4g1"
  "$FP8 --kv fp8 --t 2 --topk 256 --page-size 1 --num-pages 2048 --valid 100 --tiling s2n32x4m1p4g1"
  "$FP8 --kv fp8 --t 1 --topk 1024 --num-pages 64 --tiling s1n64x4m1p4g1"
  "$FP8 --kv fp8 --t 2 --topk 512 --num-pages 64 --valid 300 --heads 128 --tiling s4n32x8m1p4g1"
  "$FP8 --kv fp8 --t 2 --topk 256 --num-pages 64 --heads 32 --tiling s1n64x8m1p4g1"
  # v2_fp8 with 64 heads per CTA (producers dequantizing into v2_fused h64's stages): split and
  # merged with one-stage tiles, one CTA walking many pairs, empty rows at 128 heads, page size 1
  "$FP8 --kv fp8 --t 2 --topk 512 --num-pages 64 --valid 300 --heads 64 --tiling s4n32x4m1p4g3w1h64"
  "$FP8 --kv fp8 --t 1 --topk 1024 --num-pages 64 --heads 64 --tiling s1n64x4m1p4g3w1h64"
  "$FP8 --kv fp8 --t 2 --topk 256 --num-pages 64 --valid 0 --heads 128 --tiling s2n64x4m1p4g3w1h64"
  "$FP8 --kv fp8 --t 2 --topk 256 --page-size 1 --num-pages 2048 --valid 100 --heads 64 --tiling s2n32x4m1p4g3w1h64"
  # a top-k that is no multiple of 4: the producers' slots one by one (the CTAs' arrays unaligned)
  "$FP8 --kv fp8 --t 2 --topk 510 --num-pages 64 --valid 300 --heads 64 --tiling s4n32x4m1p4g3w1h64"
  # ... and inside clusters of a row's CTAs (distributed shared memory; idle CTAs of a cluster exit
  # first; four head groups: one cluster each)
  "$FP8 --kv fp8 --t 3 --topk 512 --num-pages 64 --valid 300 --tiling s8n32x8m1p4g1c1"
  "$FP8 --kv fp8 --t 2 --topk 512 --num-pages 64 --valid 300 --heads 64 --tiling s4n32x4m1p4g1c1"
  "$FP8_FLOOR --kv fp8 --t 2 --topk 512 --num-pages 64 --tiling s2n32x8m1p4g1"
  # mla_decode v1_paged: requests split over few CTAs and merged (w0: the units cut); groups of
  # causal s_q x head blocks; more CTAs than units (page size 16, separate tensors, mixed lengths);
  # one request cut over 132 CTAs (several threads per merged chunk); every compiled pipe; requests
  # kept whole with CTAs left empty (the default w)
  "$MLA --b 3 --t 300 --tiling c8x4p2w0"
  "$MLA --b 2 --t 2000 --s 2 --causal --heads 32 --tiling c16x3p1"
  "$MLA --b 4 --t 100 --page-size 16 --separate --mixed --tiling c132x4p2w0"
  "$MLA --b 1 --t 5000 --tiling c132x4p4"
  "$MLA --b 5 --t 700 --s 4 --causal --heads 64 --tiling c64x4p1w0"
  "$MLA --b 40 --t 500 --tiling c16x4p2"
  "$MLA_FLOOR --b 3 --t 3000 --s 2 --causal --heads 32 --tiling c16x4p2"
  # ... and with 64 query rows per CTA (m64, wgmma), the lockstep consumer pair (o0) with 16-byte
  # cp.async stages: split and merged, causal positions inside one group, Q reloaded across items,
  # a partial group (16 rows of 64), one request over 132 CTAs, its floor; the seesaw pair (o1) on
  # page size 1
  "$MLA --b 3 --t 300 --s 4 --causal --tiling c8x4p4g2m64w0"
  "$MLA --b 5 --t 700 --heads 128 --s 2 --causal --page-size 16 --separate --mixed --tiling c16x4p4g2m64"
  "$MLA --b 1 --t 5000 --tiling c132x4p4g2m64"
  "$MLA --b 6 --t 200 --page-size 1 --heads 32 --s 3 --causal --tiling c5x4p4g2m64o1"
  "$MLA_FLOOR --b 3 --t 3000 --s 2 --causal --heads 64 --tiling c16x4p4g2m64"
  # ... the seesaw pair (o1, the default) with whole stages by tensor-map boxes (g3) and cut stages
  # by cp.async: causal positions, separate tensors (two maps), page size 32, one request over 132
  # CTAs (pieces of one or two tiles: empty tiles B), requests kept whole with empty CTAs in both
  # groups, its floor
  "$MLA --b 3 --t 300 --s 4 --causal --tiling c8x4p4g3m64w0o1"
  "$MLA --b 8 --t 1000 --heads 128 --tiling c24x4p4g3m64o1"
  "$MLA --b 5 --t 700 --heads 128 --s 2 --causal --separate --mixed --tiling c16x4p4g3m64o1"
  "$MLA --b 4 --t 1000 --heads 32 --page-size 32 --mixed --tiling c24x4p4g3m64o1"
  "$MLA --b 1 --t 5000 --heads 128 --tiling c132x4p4g3m64o1"
  "$MLA_FLOOR --b 3 --t 3000 --s 2 --causal --heads 64 --tiling c16x4p4g3m64o1"
  # ... requests cut into aligned pieces (one request per CTA, an idle CTA past the pieces): the
  # 16-row kernel, the 64-row kernel's instance for them (equal and mixed lengths), its floor
  "$MLA --b 3 --t 2000 --tiling c16x4p2"
  "$MLA --b 3 --t 2000 --heads 128 --tiling c32x4p4g3m64o1"
  "$MLA --b 2 --t 3000 --s 4 --causal --mixed --tiling c16x4p4g3m64o1"
  "$MLA_FLOOR --b 3 --t 2000 --heads 128 --tiling c32x4p4g3m64o1"
)
only=${MLAKIT_SANITIZE_ONLY:-}
picked() { [ -z "$only" ] || [[ "$1" =~ $only ]]; }
[ -n "$only" ] && echo "[sanitize] only what matches '$only'"
fail=0
for tool in memcheck racecheck initcheck synccheck; do
  for shape in "${shapes[@]}"; do
    picked "$shape" || continue
    case "$shape" in
      "$FLOOR "*|"$FP8_FLOOR "*|"$MLA_FLOOR "*) how="--warmup 0 --iters 1" ;;  # nothing to check: one timed call
      *) how="--check --no-time" ;;
    esac
    if MLAKIT_TIMER=events "$SAN" --tool "$tool" --error-exitcode 99 ./"$BUILD"/mlakit run $shape $how --no-floor \
        --out "" >/tmp/mlakit_san.log 2>&1; then
      echo "[sanitize] $tool clean: $shape"
    else
      echo "[sanitize] $tool FAILED: $shape"; tail -n 30 /tmp/mlakit_san.log; fail=1
    fi
  done
done
# Mixed-shape sequences: one process verifies every workload of an edge suite one after the other
# (shapes, page sizes, head counts, lengths 0 and 1, split and whole requests), one workspace
# serving them all, its partials never zero-filled (initcheck sees a partial read before any call
# wrote it) and poisoned between the two runs of each workload, shared memory poisoned before each
# run. A single-shape run cannot see state one kernel leaves to the next.
mixed=(
  "mla_decode --suite mla-edge"
  "dsa_decode --suite dsa-edge"
  "dsa_decode --suite dsa-edge --kv fp8 --heads 128"
)
picked mixed && for tool in memcheck initcheck; do
  for seq in "${mixed[@]}"; do
    if MLAKIT_TIMER=events "$SAN" --tool "$tool" --error-exitcode 99 ./"$BUILD"/mlakit verify $seq --quiet \
        >/tmp/mlakit_san.log 2>&1; then
      echo "[sanitize] $tool clean: verify $seq ($(tail -n 1 /tmp/mlakit_san.log))"
    else
      echo "[sanitize] $tool FAILED: verify $seq"; tail -n 30 /tmp/mlakit_san.log; fail=1
    fi
  done
done
# The GPU quantizer (contiguous and padded pages, strided views) under every tool.
picked quantizer && for tool in memcheck racecheck initcheck synccheck; do
  if "$SAN" --tool "$tool" --error-exitcode 99 ./"$BUILD"/mlakit_tests_gpu --gtest_filter='DsaQuantizeFp8.*' \
      >/tmp/mlakit_san.log 2>&1; then
    echo "[sanitize] $tool clean: the FP8 quantizer tests"
  else
    echo "[sanitize] $tool FAILED: the FP8 quantizer tests"; tail -n 30 /tmp/mlakit_san.log; fail=1
  fi
done
# The binding's CUDA graphs: capture and replay on new inputs of the single-launch path.
if ! picked graph; then
  :  # left out by MLAKIT_SANITIZE_ONLY
elif [ -d "$BUILD/python/mlakit" ] && PYTHONPATH="$PWD/$BUILD/python" python3 -c "import torch, mlakit" 2>/dev/null; then
  for tool in memcheck racecheck; do
    if PYTHONPATH="$PWD/$BUILD/python" "$SAN" --tool "$tool" --error-exitcode 99 python3 -m pytest -q -p no:cacheprovider \
        python/tests/test_gpu.py python/tests/test_fp8.py -k "graph" >/tmp/mlakit_san.log 2>&1; then
      echo "[sanitize] $tool clean: pytest -k graph ($(tail -n 1 /tmp/mlakit_san.log))"
    else
      echo "[sanitize] $tool FAILED: pytest -k graph"; tail -n 30 /tmp/mlakit_san.log; fail=1
    fi
  done
else
  echo "[sanitize] binding or PyTorch not importable: the CUDA-graph tests were not sanitized"
fi
[ $fail -eq 0 ] && echo "[sanitize] all clean" || echo "[sanitize] problems found"
exit $fail
