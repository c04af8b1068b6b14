// Helpers shared by the CLI subcommands: which op and kernel a command line names, and the
// targets plans are made for (a live device, or a known chip on a machine without one).
#pragma once

#include <map>
#include <string>

#include "cli.h"
#include "mlakit/device.h"
#include "plan/kernel_entry.h"
#include "runtime/planner.h"
#include "workbench/op_bench.h"

namespace mlakit::cli {

// What a command works on.
struct Selection {
  const OpBench* op = nullptr;
  const KernelEntry* kernel = nullptr;  // null = the registry default of each workload
};

// The op and kernel named by `kernel_key` (--kernel KEY) or a positional that is an op name or a
// kernel key, and by the suite name (each suite belongs to one op); the first op of the table
// when nothing names one. An unknown suite, kernel or op becomes an error in `args`; false then.
bool select_op(Args& args, const std::string& positional, const std::string& kernel_key, const std::string& suite,
               Selection* out);

// verify, bench and tune: the choices of every op that flavour suites (ShapeOption::flavours_suites,
// `--kv fp8`), declared once per name; `values` receives them by name ("kv" -> "fp8").
void declare_suite_choices(Args& args, std::map<std::string, std::string>* values);
// The suite the options ask `op` for: `suite` ("" = the op's first) and the values of the given
// options that flavour it (--heads 64, --kv fp8). False, with an error naming the option in `args`,
// when the op has no such option, a value is out of range, or `trace` (a trace's workloads keep
// the format they were read in).
bool suite_request(Args& args, const OpBench& op, const std::string& suite,
                   const std::map<std::string, std::string>& values, bool trace, SuiteRequest* out);

// The chip a machine without a usable GPU plans for, to check --tiling and tune dry runs: the H200
// of the table, or the first known chip the kernel's arch runs on.
constexpr const char* kDryPlanDevice = "h200";
Status dry_target(const KernelEntry& kernel, PlanTarget* target);

// Prints "mlakit: <message>" to stderr; returns `exit_code`.
int fail(const std::string& message, int exit_code);

}  // namespace mlakit::cli
