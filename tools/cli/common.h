// Helpers shared by the CLI subcommands: which op and kernel a command line names, and the
// targets plans are made for (a live device, or a known chip on a machine without one).
#pragma once

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

// The chip a machine without a usable GPU plans for, to check --tiling and tune dry runs: the H200
// of the table, or the first known chip the kernel's arch runs on.
constexpr const char* kDryPlanDevice = "h200";
Status dry_target(const KernelEntry& kernel, PlanTarget* target);

// Prints "mlakit: <message>" to stderr; returns `exit_code`.
int fail(const std::string& message, int exit_code);

}  // namespace mlakit::cli
