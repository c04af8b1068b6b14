// The table of registered DSA kernels (explicit, so static linking keeps every variant).
#include "runtime/registry.h"

namespace mlakit {

const DsaKernel& dsa_v1_splitk_kernel();

const std::vector<const DsaKernel*>& dsa_kernels() {
  static const std::vector<const DsaKernel*> table = {&dsa_v1_splitk_kernel()};
  return table;
}

const char* default_dsa_kernel_key() { return "dsa_decode.v1_splitk.bf16"; }

const DsaKernel* find_dsa_kernel(const std::string& key) {
  for (const DsaKernel* k : dsa_kernels())
    if (k->info().key == key) return k;
  return nullptr;
}

Status check_kernel_arch(const DsaKernel& kernel, const DeviceFacts& dev) {
  Status s = check_arch(kernel.info().arch, dev);
  if (s.is_ok()) return s;
  return Status::unsupported(kernel.info().key + " " + s.message());
}

}  // namespace mlakit
