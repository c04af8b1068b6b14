// The kernel registry: every kernel variant of every op in one table (registry.cpp, one line per
// variant), keyed by a stable string ("dsa_decode.v1_splitk.bf16") that the CLI, tests, bench
// records and the tune cache use. Entries are op-neutral (plan/kernel_entry.h); an op's code asks
// for its own interface with find_kernel_as<OpKernel<Problem>>.
#pragma once

#include <string>
#include <vector>

#include "mlakit/device.h"
#include "plan/kernel_entry.h"

namespace mlakit {

// The table, in registration order.
const std::vector<const KernelEntry*>& kernels();
// Null when no kernel has this key.
const KernelEntry* find_kernel(const std::string& key);
template <class Kernel>
const Kernel* find_kernel_as(const std::string& key) {
  return dynamic_cast<const Kernel*>(find_kernel(key));
}
// The kernels of one op, in table order.
std::vector<const KernelEntry*> kernels_of(const std::string& op);

// The highest-ranked entry of `table` that runs (op, dtype, heads); the first registered wins a
// tie. Null when none does.
const KernelEntry* select_kernel(const std::vector<const KernelEntry*>& table, const std::string& op,
                                 const std::string& dtype, int heads);
// select_kernel over the registry: what planning uses when no kernel key is given.
const KernelEntry* default_kernel(const std::string& op, const std::string& dtype, int heads);
// The op's gather floor (KernelInfo::floor) for a dtype and head count; null when none.
const KernelEntry* floor_kernel(const std::string& op, const std::string& dtype, int heads);

// " dsa_decode.v1_splitk.bf16 ..." of `op` (every op when empty), for "known:" lists in messages.
std::string kernel_keys(const std::string& op = "");

// Ok when `kernel` can run on `dev` (the arch gate), else "<key> needs sm_90a; found sm_120 (...)".
Status check_kernel_arch(const KernelEntry& kernel, const DeviceFacts& dev);

}  // namespace mlakit
