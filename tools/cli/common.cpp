#include "common.h"

#include <cstdio>

namespace mlakit::cli {

const DsaKernel* resolve_kernel(Args& args, const std::string& from_positional) {
  std::string key = args.get_or("kernel", from_positional);
  if (key.empty()) key = default_dsa_kernel_key();
  const DsaKernel* k = find_dsa_kernel(key);
  if (k == nullptr) {
    std::string known;
    for (const DsaKernel* d : dsa_kernels()) known += " " + d->info().key;
    args.error("kernel '" + key + "' is not registered (known:" + known + ")");
  }
  return k;
}

Status gpu_gate(const DsaKernel& kernel, DeviceFacts* facts) {
  if (device_count() == 0)
    return Status::unsupported("no CUDA device is visible: the GPU kernels need an sm_90a device "
                               "(H100/H200)");
  int device = 0;
  cudaGetDevice(&device);
  MLAKIT_RETURN_IF_ERROR(query_device(device, facts));
  return check_kernel_arch(kernel, *facts);
}

bool parse_tiling_option(Args& args, DsaTiling* tiling, bool* given) {
  *given = false;
  auto name = args.get("tiling");
  if (!name) return true;
  Status s = DsaTiling::parse(*name, tiling);
  if (!s.is_ok()) {
    args.error("--" + s.message());
    return false;
  }
  *given = true;
  return true;
}

}  // namespace mlakit::cli
