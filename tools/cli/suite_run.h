// The machinery `mlakit bench`, `verify` and `run` share: their command lines, their options, and
// the run of one suite (a suite, a trace or one shape): every workload planned first (the one arch
// gate and tiling check), then verified and timed on the GPU, or, without a usable one, the CPU
// reference instead.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "common.h"
#include "workbench/op_bench.h"
#include "workbench/profiling.h"
#include "workbench/timer.h"

namespace mlakit::cli {

struct SuiteOptions {
  Selection sel;
  SuiteRequest suite;  // the suite and its flavouring options (--suite, --heads, --kv)
  std::optional<std::string> tiling;  // --tiling NAME, checked by planning
  uint64_t seed = 1;
  int seeds = 1;
  bool verify = true;
  bool time = true;
  bool explain = false;
  bool floor = true;  // time the op's gather floor beside the kernel (bench, run)
  bool quiet = false;  // no progress line (there is none unless stdout is a terminal)
  bool check_inputs = false;  // run --check: the op's input check before verifying
  std::string device_preset;  // --explain --device-preset NAME: plan for that chip of the table
  TimingConfig timing;
  ProfMode prof = ProfMode::kDisabled;
  std::string out_dir = "out";  // bench.jsonl + bench.csv are appended here ("" = none)
};

// What bench, verify and run read from their command lines.
struct CommandLine {
  std::string target, kernel, tiling, suite, trace, definition, out = "out", prof = "disabled", prof_kernel,
      device_preset;
  long long seed = 1, seeds = 1, warmup = 10, iters = 50, prof_skip = 0, prof_count = 2;
  bool no_verify = false, no_floor = false, explain = false, check = false, no_time = false, quiet = false,
       warm_l2 = false, graph = false;
  std::map<std::string, long long> shape;  // run: every op's integer shape options, by name ("t")
  std::map<std::string, bool> shape_flags;  // run: every op's flag shape options ("causal")
  // run: every op's named choices ("kv" -> "fp8"); verify and bench: those that flavour suites
  std::map<std::string, std::string> choices;
};

enum class Kind { kBench, kVerify, kRun };

// Declares the options of `kind` into `c`.
void declare(Args& args, Kind kind, CommandLine* c);
// The options as SuiteOptions (no GPU work, nothing read from disk).
void read_options(Args& args, const CommandLine& c, SuiteOptions* o);
// --prof ncu / ncu-stalls: the same command again under Nsight Compute (before any CUDA work
// here), ncu-stalls with the sections of source-level warp-state sampling.
int reexec_ncu(const CommandLine& c, const OpBench& op, ProfMode mode);
// A gather floor computes nothing: asking to verify one (`what`: "verify", "--check") is an error.
void check_floor_verify(Args& args, const SuiteOptions& o, const std::string& what);
// Bench records go to --out DIR: a folder that cannot take them is a usage error before any work.
void check_out_dir(Args& args, const SuiteOptions& o);
// Plans, verifies and times every workload of `suite` (or shows the CPU reference); an exit code.
int run_suite(const SuiteOptions& o, const BenchSuite& suite);

}  // namespace mlakit::cli
