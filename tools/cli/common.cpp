#include "common.h"

#include <cstdio>

#include "runtime/registry.h"

namespace mlakit::cli {

bool select_op(Args& args, const std::string& positional, const std::string& kernel_key, const std::string& suite,
               Selection* out) {
  *out = Selection{};
  const OpBench* suite_op = suite.empty() ? nullptr : op_bench_of_suite(suite);
  if (!suite.empty() && suite_op == nullptr) {
    args.error("--suite " + suite + ": no such suite (known:" + suite_names_of_all_ops() + ")");
    return false;
  }
  const OpBench* named_op = positional.empty() ? nullptr : find_op_bench(positional);
  if (!positional.empty() && !named_op && !kernel_key.empty()) {
    args.error("'" + positional + "' and --kernel " + kernel_key + ": name the kernel once");
    return false;
  }
  const std::string key = !kernel_key.empty() ? kernel_key : named_op ? "" : positional;
  if (!key.empty()) {
    out->kernel = find_kernel(key);
    if (out->kernel == nullptr) {
      args.error("kernel '" + key + "' is not registered (known:" + kernel_keys() + "; ops:" + op_names() + ")");
      return false;
    }
    const OpBench* kernel_op = find_op_bench(out->kernel->info().op);
    if (kernel_op == nullptr) {
      args.error("kernel '" + key + "': the workbench has no op '" + out->kernel->info().op + "'");
      return false;
    }
    if (named_op && named_op != kernel_op) {
      args.error("kernel '" + key + "' is a " + kernel_op->name() + " kernel, not " + named_op->name());
      return false;
    }
    named_op = kernel_op;
  }
  if (named_op && suite_op && named_op != suite_op) {
    args.error("suite '" + suite + "' is a " + suite_op->name() + " suite, not " + named_op->name());
    return false;
  }
  out->op = named_op ? named_op : suite_op ? suite_op : op_benches().front();
  return true;
}

Status dry_target(const KernelEntry& kernel, PlanTarget* target) {
  DeviceFacts preferred;
  if (find_known_device(kDryPlanDevice, &preferred).is_ok() && plan_target(kernel, preferred, target).is_ok())
    return Status::ok();
  for (const DeviceFacts& facts : known_devices())
    if (plan_target(kernel, facts, target).is_ok()) return Status::ok();
  return Status::unsupported(kernel.info().key + ": no known chip runs its arch " + kernel.info().arch.describe());
}

int fail(const std::string& message, int exit_code) {
  std::fflush(stdout);  // what was printed before the error stays before it in a shared log
  std::fprintf(stderr, "mlakit: %s\n", message.c_str());
  return exit_code;
}

}  // namespace mlakit::cli
