// The table of registered kernels (explicit, so static linking keeps every variant). Registering a
// variant: its folder under src/kernels/<op>/<variant>/ with an entry.cpp, its #include and one
// line in the table below.
#include "runtime/registry.h"

#include "kernels/dsa_decode/floor_gather/entry.h"
#include "kernels/dsa_decode/v1_splitk/entry.h"
#include "kernels/dsa_decode/v2_fp8/entry.h"
#include "kernels/dsa_decode/v2_fused/entry.h"
#include "kernels/mla_decode/v1_paged/entry.h"

namespace mlakit {

const std::vector<const KernelEntry*>& kernels() {
  static const std::vector<const KernelEntry*> table = {
      &dsa_v1::entry(),
      &dsa_v2::entry(),
      &dsa_floor::entry(),
      &dsa_v2_fp8::entry(),
      &dsa_v2_fp8::floor_entry(),
      &mla_v1::entry(),
      &mla_v1::floor_entry(),
  };
  return table;
}

const KernelEntry* find_kernel(const std::string& key) {
  for (const KernelEntry* k : kernels())
    if (k->info().key == key) return k;
  return nullptr;
}

std::vector<const KernelEntry*> kernels_of(const std::string& op) {
  std::vector<const KernelEntry*> out;
  for (const KernelEntry* k : kernels())
    if (k->info().op == op) out.push_back(k);
  return out;
}

const KernelEntry* select_kernel(const std::vector<const KernelEntry*>& table, const std::string& op,
                                 const std::string& dtype, int heads) {
  const KernelEntry* best = nullptr;
  for (const KernelEntry* k : table)
    if (k->info().op == op && !k->info().floor && k->info().runs(dtype, heads) &&
        (best == nullptr || k->info().rank > best->info().rank))
      best = k;
  return best;
}

const KernelEntry* default_kernel(const std::string& op, const std::string& dtype, int heads) {
  return select_kernel(kernels(), op, dtype, heads);
}

const KernelEntry* floor_kernel(const std::string& op, const std::string& dtype, int heads) {
  for (const KernelEntry* k : kernels())
    if (k->info().op == op && k->info().floor && k->info().runs(dtype, heads)) return k;
  return nullptr;
}

std::string kernel_keys(const std::string& op) {
  std::string keys;
  for (const KernelEntry* k : kernels())
    if (op.empty() || k->info().op == op) keys += " " + k->info().key;
  return keys;
}

Status check_kernel_arch(const KernelEntry& kernel, const DeviceFacts& dev) {
  Status s = check_arch(kernel.info().arch, dev);
  if (s.is_ok()) return s;
  return Status::unsupported(kernel.info().key + " " + s.message());
}

}  // namespace mlakit
