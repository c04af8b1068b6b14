// Live device facts through the CUDA runtime; a machine without a driver or GPU has 0 devices.
#include <array>
#include <mutex>

#include <cuda_runtime_api.h>

#include "mlakit/device.h"

namespace mlakit {

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error for later calls
    return 0;
  }
  return n;
}

Status query_device(int device, DeviceFacts* out) {
  const int n = device_count();
  if (n == 0) return Status::unsupported("no CUDA device is visible (no GPU or no driver)");
  if (device < 0 || device >= n)
    return Status::invalid_argument("device: expected 0.." + std::to_string(n - 1) + ", got " +
                                    std::to_string(device));
  cudaDeviceProp prop;
  if (cudaError_t e = cudaGetDeviceProperties(&prop, device); e != cudaSuccess)
    return Status::device_error(std::string("cudaGetDeviceProperties: ") + cudaGetErrorString(e));
  DeviceFacts f;
  f.name = prop.name;
  f.sm_major = prop.major;
  f.sm_minor = prop.minor;
  f.num_sms = prop.multiProcessorCount;
  f.smem_per_block_optin = int(prop.sharedMemPerBlockOptin);
  f.smem_per_sm = int(prop.sharedMemPerMultiprocessor);
  f.regs_per_sm = prop.regsPerMultiprocessor;
  f.max_threads_per_sm = prop.maxThreadsPerMultiProcessor;
  f.l2_bytes = prop.l2CacheSize;
  // Datasheet bandwidth from the table when the chip is known (the runtime no longer reports it).
  DeviceFacts known;
  if (find_known_device(f.name, &known).is_ok()) f.hbm_gbps = known.hbm_gbps;
  f.live = true;
  *out = f;
  return Status::ok();
}

Status cached_device_facts(int device, DeviceFacts* out) {
  static std::mutex mu;
  static std::array<DeviceFacts, 64> facts;
  static std::array<bool, 64> have{};
  if (device < 0 || device >= int(facts.size())) return query_device(device, out);
  std::lock_guard<std::mutex> lock(mu);
  if (!have[device]) {
    MLAKIT_RETURN_IF_ERROR(query_device(device, &facts[device]));
    have[device] = true;
  }
  *out = facts[device];
  return Status::ok();
}

}  // namespace mlakit
