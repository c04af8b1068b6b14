// `mlakit list` and `mlakit devices`.
#include <cstdio>

#include "common.h"
#include "runtime/registry.h"

namespace mlakit::cli {
namespace {

// "runnable on sm_90 (...)", "skipped: ..." for one kernel on this machine.
std::string status_here(const KernelEntry& kernel, bool have_device, const DeviceFacts& facts) {
  if (!have_device) return "skipped: no CUDA device";
  if (Status s = check_kernel_arch(kernel, facts); !s.is_ok()) return "skipped: " + s.message();
  return "runnable on " + facts.describe();
}

const char* kListUsage =
    "usage: mlakit list\n\nLists every registered kernel of every op with its registry key, op, variant,\n"
    "dtype, head counts, required arch, whether it can run on this machine and for which shapes it\n"
    "is the default; then each op's suites.";
const char* kDevicesUsage =
    "usage: mlakit devices\n\nPrints the facts of every visible CUDA device and the built-in table\n"
    "(H100, H200, B200, B300, RTX 5090).";

int run_list(Args& args) {
  if (!args.parse()) return args.finish(kListUsage);
  DeviceFacts facts;
  const bool have_device = device_count() > 0 && query_device(0, &facts).is_ok();
  std::printf("%-28s %-11s %-12s %-6s %-15s %-8s %s\n", "kernel", "op", "variant", "dtype", "heads", "arch",
              "status here");
  for (const KernelEntry* k : kernels()) {
    const KernelInfo& i = k->info();
    std::printf("%-28s %-11s %-12s %-6s %-15s %-8s %s\n", i.key.c_str(), i.op.c_str(), i.variant.c_str(),
                i.dtype.c_str(), i.heads_string().c_str(), i.arch.describe().c_str(),
                status_here(*k, have_device, facts).c_str());
    std::string defaults;
    for (int h : i.heads)
      if (default_kernel(i.op, i.dtype, h) == k) defaults += (defaults.empty() ? "" : ", ") + std::to_string(h);
    if (i.floor)
      std::printf("    %s (the %s gather floor: bench times it beside every %s kernel)\n", i.description.c_str(),
                  i.op.c_str(), i.op.c_str());
    else
      std::printf("    %s (rank %d%s)\n", i.description.c_str(), i.rank,
                  defaults.empty() ? "" : ("; the default for " + i.dtype + " with " + defaults + " heads").c_str());
  }
  std::printf("\nops and their suites:\n");
  for (const OpBench* op : op_benches()) {
    std::printf("  %-11s%s\n", op->name().c_str(), suite_summary(*op).c_str());
  }
  return kExitOk;
}

int run_devices(Args& args) {
  if (!args.parse()) return args.finish(kDevicesUsage);
  const int n = device_count();
  std::printf("live devices: %d\n", n);
  for (int d = 0; d < n; ++d) {
    DeviceFacts f;
    if (Status s = query_device(d, &f); !s.is_ok()) {
      std::printf("  [%d] %s\n", d, s.to_string().c_str());
      continue;
    }
    std::printf("  [%d] %s: smem/block %d KB, smem/SM %d KB, L2 %d MB, regs/SM %d\n", d,
                f.describe().c_str(), f.smem_per_block_optin / 1024, f.smem_per_sm / 1024,
                f.l2_bytes >> 20, f.regs_per_sm);
  }
  std::printf("\nknown devices (datasheet leads):\n");
  std::printf("  %-26s %-7s %5s %12s %10s %8s %9s\n", "name", "arch", "SMs", "smem/block", "smem/SM",
              "L2", "HBM GB/s");
  for (const DeviceFacts& f : known_devices())
    std::printf("  %-26s sm_%d%d  %5d %9d KB %7d KB %5d MB %9.0f\n", f.name.c_str(), f.sm_major,
                f.sm_minor, f.num_sms, f.smem_per_block_optin / 1024, f.smem_per_sm / 1024,
                f.l2_bytes >> 20, f.hbm_gbps);
  return kExitOk;
}

}  // namespace

MLAKIT_CLI_COMMAND(list, "list", "registered kernels, their arch and whether they run here", run_list);
MLAKIT_CLI_COMMAND(devices, "devices", "the live device(s) and the table of known chips", run_devices);

}  // namespace mlakit::cli
