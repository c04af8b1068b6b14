#!/usr/bin/env bash
# flashinfer-bench runs mlakit as a solution of the DSA definitions on the project's workloads,
# and `mlakit bench` runs the same workloads beside it (docs/flashinfer-bench.md).
#
#   scripts/run_flashinfer_bench.sh [--out DIR] [--definitions "ps64 ps1"] [--suites "contest serving"]
#                                   [--build DIR] [--warmup N] [--iterations N] [--trials N]
#                                   [--no-mlakit-bench] [--check]
#   make flashinfer-bench        (the same, defaults)
#
# Steps: check for an sm_90 GPU (else: skipped, exit 0), build the CLI and the Python binding
# (targets mlakit_cli, mlakit_ext only), install the carried wheels (.whl/fib/, `make fib-wheels`
# where PyPI is reachable) into a temporary folder, write the trace set (scripts/fib/traceset.py,
# with mlakit's solution), run the harness (`flashinfer-bench run --local`), run
# `mlakit bench --trace` on the same trace set, print the report (scripts/fib/report.py).
#
# --out DIR (default out/flashinfer-bench) receives: report.md, report.json, harness.log,
# mlakit-bench.log, traces-<ps>.jsonl (the harness's own traces), bench-<ps>.jsonl.
# --check only says whether it would run here, and why not.
# Exit status: 0 when skipped or every harness trace PASSED; 1 otherwise.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

OUT=out/flashinfer-bench
DEFS="ps64 ps1"
SUITES="contest serving"
BUILD=${BUILD:-build}
WARMUP=10
ITERS=50
TRIALS=3
MLAKIT_BENCH=1
CHECK=0
usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT=$2; shift 2 ;;
    --definitions) DEFS=$2; shift 2 ;;
    --suites) SUITES=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --iterations) ITERS=$2; shift 2 ;;
    --trials) TRIALS=$2; shift 2 ;;
    --no-mlakit-bench) MLAKIT_BENCH=0; shift ;;
    --check) CHECK=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run_flashinfer_bench.sh: unknown argument '$1' (--help lists them)" >&2; exit 2 ;;
  esac
done

case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac

say() { echo "[flashinfer-bench] $*"; }
die() { echo "[flashinfer-bench] error: $*" >&2; exit 1; }

declare -A DEF_NAME=(
  [ps64]=dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64
  [ps1]=dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps1
)
for d in $DEFS; do
  [ -n "${DEF_NAME[$d]:-}" ] || { echo "run_flashinfer_bench.sh: --definitions: expected ps64 and/or ps1, got '$d'" >&2; exit 2; }
done

# 1. An sm_90 GPU that PyTorch sees (the harness times through torch.cuda), or a clean skip.
gpu=$(python3 - <<'PY' 2>&1
try:
    import torch
except Exception as e:  # noqa: BLE001
    print(f"skip PyTorch is not importable ({type(e).__name__}: {e})")
    raise SystemExit(0)
if not torch.cuda.is_available():
    print("skip no CUDA device visible to PyTorch")
elif torch.cuda.get_device_capability() != (9, 0):
    major, minor = torch.cuda.get_device_capability()
    print(f"skip mlakit's kernels are built for sm_90a (H100/H200); this GPU is sm_{major}{minor}")
else:
    print(f"ok {torch.cuda.get_device_name()} (torch {torch.__version__})")
PY
)
case "$gpu" in
  ok\ *) ;;
  skip\ *)
    say "skipped: ${gpu#skip }."
    say "It runs on a machine with an H100 or H200: 'make flashinfer-bench' (wheels from 'make fib-wheels')."
    exit 0 ;;
  *) die "could not check for a GPU: $gpu" ;;
esac

# 2. The harness: importable already, or installed from the carried wheels.
SITE=""
if ! python3 -c "import flashinfer_bench" >/dev/null 2>&1; then
  ls .whl/fib/flashinfer_bench-*.whl >/dev/null 2>&1 ||
    die "flashinfer-bench is not installed and .whl/fib/ holds no wheels: run 'make fib-wheels' where PyPI is reachable and carry .whl/ with the tree."
  site_parent=$(mktemp -d)
  trap 'rm -rf "$site_parent"' EXIT
  SITE=$site_parent/site
fi
if [ $CHECK -eq 1 ]; then
  say "ready: ${gpu#ok }; flashinfer-bench $([ -n "$SITE" ] && echo "from .whl/fib/" || echo "installed")"
  exit 0
fi
say "GPU: ${gpu#ok }"
if [ -n "$SITE" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" .whl/fib/*.whl ||
    die "installing .whl/fib/*.whl into $SITE failed"
fi

# 3. The CLI and the binding (nothing else); the build's output goes to a log.
WORK="$BUILD/flashinfer-bench"
mkdir -p "$WORK"
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  generator=$(command -v ninja >/dev/null && echo "-G Ninja" || true)
  cmake -S . -B "$BUILD" $generator -DCMAKE_BUILD_TYPE=Release >"$WORK/build.log" 2>&1 ||
    { tail -n 30 "$WORK/build.log"; die "configure failed (log: $WORK/build.log)"; }
fi
say "building mlakit_cli and mlakit_ext in $BUILD"
cmake --build "$BUILD" -j "$(nproc)" --target mlakit_cli mlakit_ext >>"$WORK/build.log" 2>&1 ||
  { tail -n 30 "$WORK/build.log"; die "building mlakit_cli and mlakit_ext failed (log: $WORK/build.log)"; }
[ -d "$BUILD/python/mlakit" ] || die "the binding was not built in $BUILD/python (nanobind missing?)"

export PYTHONPATH="${SITE:+$SITE:}$BUILD/python${PYTHONPATH:+:$PYTHONPATH}"
export FIB_CACHE_PATH="$WORK/cache"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
rm -rf "$WORK/traceset" "$WORK"/mlakit-bench-*

# 4. The trace set: definitions, workloads, index blobs, mlakit's solution.
python3 scripts/fib/traceset.py --out "$WORK/traceset" --definitions $DEFS --suites $SUITES \
  --with-solution || die "writing the trace set failed"
harness_version=$(python3 -c "import importlib.metadata as m; print(m.version('flashinfer-bench'))" 2>/dev/null || echo "?")

# 5. The harness, through its own CLI (flashinfer-bench run --local ...).
names=()
for d in $DEFS; do names+=("${DEF_NAME[$d]}"); done
say "flashinfer-bench $harness_version: run --local $WORK/traceset (warm-up $WARMUP, $ITERS iterations, $TRIALS trials)"
PYTHONUNBUFFERED=1 python3 -c 'import sys; from flashinfer_bench.cli import cli; sys.argv[0] = "flashinfer-bench"; cli()' \
  run --local "$WORK/traceset" --definitions "${names[@]}" --warmup-runs "$WARMUP" \
  --iterations "$ITERS" --num-trials "$TRIALS" --log-level INFO 2>&1 | tee "$OUT/harness.log"
harness_rc=${PIPESTATUS[0]}
[ "$harness_rc" -eq 0 ] || say "the harness exited with $harness_rc (its log: $OUT/harness.log)"

# 6. mlakit bench on the same trace set (CUPTI span, cold L2, median; fp64 CPU verification).
bench_args=()
if [ $MLAKIT_BENCH -eq 1 ]; then
  : >"$OUT/mlakit-bench.log"
  for d in $DEFS; do
    say "mlakit bench --trace $WORK/traceset --definition ${DEF_NAME[$d]}"
    "$BUILD/mlakit" bench --trace "$WORK/traceset" --definition "${DEF_NAME[$d]}" \
      --warmup "$WARMUP" --iters "$ITERS" --out "$WORK/mlakit-bench-$d" 2>&1 | tee -a "$OUT/mlakit-bench.log"
    if [ -f "$WORK/mlakit-bench-$d/bench.jsonl" ]; then
      cp "$WORK/mlakit-bench-$d/bench.jsonl" "$OUT/bench-$d.jsonl"
      bench_args+=("${DEF_NAME[$d]}=$WORK/mlakit-bench-$d/bench.jsonl")
    fi
  done
fi

# 7. The report: the harness's verdict and latency beside mlakit bench.
for d in $DEFS; do
  f="$WORK/traceset/traces/dsa_paged/${DEF_NAME[$d]}.jsonl"
  [ -f "$f" ] && cp "$f" "$OUT/traces-$d.jsonl"
done
python3 scripts/fib/report.py --traceset "$WORK/traceset" --harness-version "$harness_version" \
  --out "$OUT" ${bench_args[@]+--mlakit-bench "${bench_args[@]}"}
rc=$?
say "report: $OUT/report.md"
exit $rc
