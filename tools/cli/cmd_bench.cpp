// `mlakit bench` and `mlakit verify`: verify (and time) a kernel of any op on a suite or a trace
// (tools/cli/suite_run.h runs it).
#include <cstdio>
#include <memory>

#include "suite_run.h"

namespace mlakit::cli {
namespace {

Status load_suite_or_trace(const CommandLine& c, const SuiteOptions& o, std::unique_ptr<BenchSuite>* out) {
  if (!c.trace.empty()) return o.sel.op->load_trace(c.trace, c.definition, o.seed, out);
  return o.sel.op->make_suite(o.suite, o.seed, out);
}

int suite_command(Args& args, Kind kind, const char* usage) {
  CommandLine c;
  declare(args, kind, &c);
  if (!args.parse()) return args.finish(usage);
  SuiteOptions o;
  o.time = kind == Kind::kBench;
  o.verify = !c.no_verify;
  if (select_op(args, c.target, c.kernel, c.suite, &o.sel))
    suite_request(args, *o.sel.op, c.suite, c.choices, !c.trace.empty(), &o.suite);
  read_options(args, c, &o);
  check_floor_verify(args, o, kind == Kind::kVerify ? "verify" : "");
  if (o.sel.kernel && o.sel.kernel->info().floor) o.verify = false;
  check_out_dir(args, o);
  if (!args.ok()) return args.finish(usage);
  if (runs_under_ncu(o.prof)) return reexec_ncu(c, *o.sel.op, o.prof);
  std::unique_ptr<BenchSuite> suite;
  if (Status s = load_suite_or_trace(c, o, &suite); !s.is_ok())
    return fail((c.trace.empty() ? "" : "--trace: ") + s.message(),
                s.code() == Code::kInvalidArgument || s.code() == Code::kNotFound ? kExitUsage : kExitFailure);
  return run_suite(o, *suite);
}

const char* kBenchUsage =
    "usage: mlakit bench [OP|KERNEL] [--suite NAME [--heads H] [--kv bf16|fp8] | --trace DIR\n"
    "                    [--definition NAME]] [--kernel KEY] [--tiling NAME] [--seed S] [--seeds N]\n"
    "                    [--warmup N] [--iters N] [--no-verify] [--no-floor] [--explain\n"
    "                    [--device-preset NAME]] [--out DIR] [--prof MODE] [--graph] [--warm-l2]\n"
    "                    [--quiet]\n\n"
    "Verifies and times every workload of a suite (dsa-contest, dsa-serving, dsa-edge, mla-serving,\n"
    "mla-edge; a suite names its op) or of a FlashInfer-Trace dataset directory. --kv fp8 runs a\n"
    "dsa_decode suite's workloads on the FP8 cache (the same workloads, the cache quantized to\n"
    "DeepSeek-V3.2's 656-byte rows); --kv bf16 is the default. --heads 32|64|128 gives every\n"
    "workload that many query heads; --heads 16 is the default. Span = median GPU time of one call\n"
    "over --iters calls (cold L2 before each), host = host time of one call. Every\n"
    "workload is planned first; a --tiling that no workload accepts exits 2 with the reason. Each\n"
    "workload is also timed with the op's gather floor (the same rows moved into shared memory, no\n"
    "math): floor_us and x_floor = span / floor in the table, from the same run (--no-floor skips\n"
    "it). --seeds N repeats the suite with N fresh seeds. Without an sm_90a GPU (or, on a machine\n"
    "without one, without a kernel of the op), runs the CPU reference on the workloads instead.\n"
    "--explain prints each workload's plan; without a usable GPU it plans for the limits of a chip\n"
    "of the device table (--device-preset h100|h200, default h200), prints the plans and runs\n"
    "nothing; --device-preset does the same on a machine with a GPU.\n\n"
    "Profiling: --prof disabled|annotation|ncu|ncu-stalls. annotation wraps each timed call in an\n"
    "NVTX range named after the workload; ncu re-runs the command under Nsight Compute\n"
    "(--clock-control none) with --prof-kernel REGEX (default: the op's kernels, dsa_ or mla_),\n"
    "--prof-skip N, --prof-count N (default 2) and prints where the report went; ncu-stalls does the\n"
    "same with source-level warp-state sampling (sections SourceCounters and WarpStateStats), whose\n"
    "report lab/scripts/ncu_stalls.py reads. Results are appended to --out DIR (default out/)\n"
    "as JSON lines and CSV; a folder that cannot take them exits 2 before anything runs.\n"
    "--warm-l2 leaves out the L2 flush before each call, so data and kernel code stay in L2 from\n"
    "the call before: against the cold span it tells what DRAM latency costs (a diagnosis; its\n"
    "records say \"warm L2\" in method and suite, and it is never the figure of merit). --graph\n"
    "times replays of each call captured once into a CUDA graph, as engines replay a decode step\n"
    "(the same span, cold L2 and floor; records say \"graph\" in method and suite).\n\n"
    "On a terminal a progress line names the workload at work; --quiet turns it off (pipes and\n"
    "logs never get it). A shape whose host memory would pass the limit (physical memory, or\n"
    "MLAKIT_HOST_MEMORY_LIMIT=16G lower) exits 2 before anything runs; runs whose host work is\n"
    "estimated past 10 s say so on stderr.";
const char* kVerifyUsage =
    "usage: mlakit verify [OP|KERNEL] [--suite NAME [--heads H] [--kv bf16|fp8] | --trace DIR\n"
    "                     [--definition NAME]] [--kernel KEY] [--tiling NAME] [--seed S] [--seeds N]\n"
    "                     [--explain [--device-preset NAME]] [--prof MODE] [--quiet]\n\n"
    "Checks a kernel against the fp64 CPU reference with the contest rule (an element fails only\n"
    "if abs err > 1e-2 and rel err > 1e-2), every output (output and lse), outputs poisoned before\n"
    "each run, two runs bitwise equal; with the FP8 cache (--kv fp8) the reference reads the\n"
    "dequantized cache; --heads H gives every workload H query heads, as for bench. --seeds N\n"
    "repeats with N fresh seeds. --explain (--device-preset), --prof, --quiet and the host-memory\n"
    "limit as for bench.";

int run_bench(Args& args) { return suite_command(args, Kind::kBench, kBenchUsage); }
int run_verify(Args& args) { return suite_command(args, Kind::kVerify, kVerifyUsage); }

}  // namespace

MLAKIT_CLI_COMMAND(bench, "bench", "verify and time a kernel on a suite or a trace", run_bench);
MLAKIT_CLI_COMMAND(verify, "verify", "check a kernel against the CPU reference on a suite", run_verify);

}  // namespace mlakit::cli
