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

// One launch of `Kernel` with `smem` bytes of dynamic shared memory (opted in once per device),
// cooperative when `cooperative` (its CTAs wait for each other, so they must be co-resident), in
// clusters of `cluster_x` CTAs along x when it is above 1 (grid.x a multiple of it; at most 8, the
// portable size).
template <auto Kernel, class Params>
cudaError_t launch_with_smem(const Params& params, dim3 grid, dim3 block, int smem, bool cooperative,
                             cudaStream_t stream, int cluster_x = 1) {
  if (cudaError_t e = opt_in_smem_once<Kernel>(smem); e != cudaSuccess) return e;
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute attr[2];
  unsigned n = 0;
  if (cooperative) {
    attr[n].id = cudaLaunchAttributeCooperative;
    attr[n++].val.cooperative = 1;
  }
  if (cluster_x > 1) {
    attr[n].id = cudaLaunchAttributeClusterDimension;
    attr[n].val.clusterDim.x = unsigned(cluster_x);
    attr[n].val.clusterDim.y = 1;
    attr[n++].val.clusterDim.z = 1;
  }
  config.attrs = attr;
  config.numAttrs = n;
  return cudaLaunchKernelEx(&config, Kernel, params);
}

}  // namespace mlakit::kernels
