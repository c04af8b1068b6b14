// Host-side launch helpers shared by the launchers of src/kernels (host-safe).
#pragma once

#include <atomic>

#include <cuda_runtime_api.h>

namespace mlakit::kernels {

// Raises `kernel`'s dynamic shared-memory limit to `bytes` once per device: one static flag array
// per kernel (the Kernel template argument), so every instantiation opts in on first use.
template <auto Kernel>
cudaError_t opt_in_smem_once(int bytes) {
  constexpr int kMaxDevices = 64;
  static std::atomic<bool> done[kMaxDevices];
  int device = 0;
  if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  if (device < kMaxDevices && done[device].load(std::memory_order_acquire)) return cudaSuccess;
  if (cudaError_t e = cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
      e != cudaSuccess)
    return e;
  if (device < kMaxDevices) done[device].store(true, std::memory_order_release);
  return cudaSuccess;
}

}  // namespace mlakit::kernels
