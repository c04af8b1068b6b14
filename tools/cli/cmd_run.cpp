// `mlakit run`: verify and time a kernel of any op on one synthetic shape (tools/cli/suite_run.h
// runs it).
#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "suite_run.h"

namespace mlakit::cli {
namespace {

const char* kRunUsage =
    "usage: mlakit run [OP|KERNEL] <shape options> [--kernel KEY] [--tiling NAME] [--seed S] [--seeds N]\n"
    "                  [--check] [--no-time] [--no-floor] [--explain [--device-preset NAME]]\n"
    "                  [--warmup N] [--iters N] [--out DIR] [--prof MODE] [--graph] [--warm-l2] [--quiet]\n\n"
    "Runs one synthetic shape of an op (default dsa_decode). dsa_decode's shape options:\n"
    "--t N [--page-size P] [--topk K] [--num-pages N] [--valid V] [--mixed] [--heads H]\n"
    "[--kv bf16|fp8]: T tokens of H query heads (16, 32, 64 or 128; default 16), each row V valid\n"
    "top-k picks (default: topk; --mixed: row t V >> (t % 6)) clustered by page, the rest -1, over a\n"
    "bf16 cache or DeepSeek-V3.2's FP8 one (656-byte rows). mla_decode's: --b B --t N [--s S]\n"
    "[--heads H] [--page-size P] [--causal] [--mixed] [--separate]: B requests of N cached rows each\n"
    "(--mixed: lengths in [N/64, N]), S query tokens, on random pages of a combined 576-wide cache\n"
    "(--separate: four tensors). --check runs the op's input check (mla_check_inputs), then verifies\n"
    "against the CPU reference; --no-time skips timing (for compute-sanitizer: without --check the\n"
    "kernel still runs once, its errors reported, nothing compared); --explain prints the plan\n"
    "(without a usable GPU, or with --device-preset NAME, for that chip's limits, running nothing,\n"
    "as for bench). A tiling the shape cannot run exits 2 with the reason.\n\n"
    "Profiling: --prof disabled|annotation|ncu|ncu-stalls, as for bench (--prof-kernel REGEX,\n"
    "--prof-skip N, --prof-count N); --graph and --warm-l2 as for bench. Results are appended to\n"
    "--out DIR (default out/) as JSON lines and CSV.\n\n"
    "The host memory the shape needs is estimated first: past the limit (physical memory, or\n"
    "MLAKIT_HOST_MEMORY_LIMIT=16G lower) it exits 2 naming the option that sized it; a shape whose\n"
    "host work is estimated past 10 s says so on stderr. --quiet: no progress line on a terminal.";

// The selected op's shape options from the command line: in its ranges, the required ones given,
// none of another op's.
ShapeArgs read_shape(Args& args, const OpBench& op, const CommandLine& c) {
  ShapeArgs shape;
  std::set<std::string> own;
  for (const ShapeOption& s : op.shape_options()) {
    own.insert(s.name);
    const std::string name = "--" + s.name;
    if (!args.given(name)) {
      if (s.required) args.error(name + " N (" + s.help + ") is required");
      continue;
    }
    if (s.flag) {
      shape[s.name] = 1;
      continue;
    }
    if (!s.choices.empty()) {  // a valid value (Args::choice checked it): its index
      const std::string& value = c.choices.at(s.name);
      shape[s.name] = std::find(s.choices.begin(), s.choices.end(), value) - s.choices.begin();
      continue;
    }
    const long long v = c.shape.at(s.name);
    if (v < s.lo || v > s.hi)
      args.error(name + ": expected a value in [" + std::to_string(s.lo) + ", " + std::to_string(s.hi) + "], got " +
                 std::to_string(v));
    shape[s.name] = v;
  }
  std::vector<std::string> names;
  for (const auto& entry : c.shape) names.push_back(entry.first);
  for (const auto& entry : c.shape_flags) names.push_back(entry.first);
  for (const auto& entry : c.choices) names.push_back(entry.first);
  for (const std::string& name : names)
    if (!own.count(name) && args.given("--" + name)) args.error("--" + name + " is not a shape option of " + op.name());
  return shape;
}

// make_shape names a shape argument as the library does ("valid: expected at most topk = 256, got
// 300"); on the command line it is the option --valid.
std::string name_the_option(const std::string& message, const OpBench& op) {
  for (const ShapeOption& s : op.shape_options())
    if (message.rfind(s.name + ": ", 0) == 0) return "--" + message;
  return message;
}

int run_run(Args& args) {
  CommandLine c;
  declare(args, Kind::kRun, &c);
  if (!args.parse()) return args.finish(kRunUsage);
  SuiteOptions o;
  ShapeArgs shape;
  if (select_op(args, c.target, c.kernel, "", &o.sel)) shape = read_shape(args, *o.sel.op, c);
  read_options(args, c, &o);
  o.verify = c.check;
  o.check_inputs = c.check;
  o.time = !c.no_time;
  check_floor_verify(args, o, o.verify ? "--check" : "");
  check_out_dir(args, o);
  if (!args.ok()) return args.finish(kRunUsage);
  if (runs_under_ncu(o.prof)) return reexec_ncu(c, *o.sel.op, o.prof);
  std::unique_ptr<BenchSuite> suite;
  if (Status s = o.sel.op->make_shape(shape, o.seed, &suite); !s.is_ok())
    return fail(name_the_option(s.message(), *o.sel.op), kExitUsage);
  return run_suite(o, *suite);
}

}  // namespace

MLAKIT_CLI_COMMAND(run, "run", "run one shape (the workbench's single-shape command)", run_run);

}  // namespace mlakit::cli
