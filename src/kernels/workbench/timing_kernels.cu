// Device helpers of the workbench: cold-L2 flush, busy-wait, spin of known span.
// All three are tiny and arch-neutral; %globaltimer is the GPU's nanosecond wall clock (its
// update granularity is about 1 us on Hopper, finer than any span they are used for).
#include "kernels/workbench/timing_kernels.h"

namespace {

__device__ __forceinline__ uint64_t global_timer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ void spin_until(uint64_t deadline_ns) {
  while (global_timer_ns() < deadline_ns) {
  }
}

}  // namespace

extern "C" __global__ void mlakit_wb_l2_flush(uint4* buffer, size_t count, uint32_t salt) {
  const uint4 value = make_uint4(salt, salt ^ 0x9e3779b9u, salt + 1u, ~salt);
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count;
       i += size_t(gridDim.x) * blockDim.x)
    buffer[i] = value;
}

extern "C" __global__ void mlakit_wb_busy_wait(uint64_t ns) {
  spin_until(global_timer_ns() + ns);
}

extern "C" __global__ void mlakit_wb_spin(uint64_t ns) {
  spin_until(global_timer_ns() + ns);
}

namespace mlakit::kernels {

cudaError_t launch_l2_flush(void* buffer, size_t bytes, uint32_t salt, int num_sms,
                            cudaStream_t stream) {
  const size_t count = bytes / sizeof(uint4);
  if (count == 0) return cudaSuccess;
  // 4 CTAs of 512 threads per SM keep enough stores in flight to run at write bandwidth;
  // without an SM count, 132 (H100/H200).
  const int blocks = (num_sms > 0 ? num_sms : 132) * 4;
  mlakit_wb_l2_flush<<<blocks, 512, 0, stream>>>(static_cast<uint4*>(buffer), count, salt);
  return cudaGetLastError();
}

cudaError_t launch_busy_wait(uint64_t ns, cudaStream_t stream) {
  mlakit_wb_busy_wait<<<1, 32, 0, stream>>>(ns);
  return cudaGetLastError();
}

cudaError_t launch_spin(uint64_t ns, int blocks, cudaStream_t stream) {
  mlakit_wb_spin<<<blocks > 0 ? blocks : 1, 32, 0, stream>>>(ns);
  return cudaGetLastError();
}

}  // namespace mlakit::kernels
