// What the micro-benchmarks share: a CUDA call checked (on failure: the call and the error on
// stderr, then `return 1` from the enclosing function) and the median of a sample.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "kernels/common/async_pipe.cuh"  // smem_addr

#define MICRO_CHECK(x)                                             \
  do {                                                             \
    const cudaError_t e = (x);                                     \
    if (e != cudaSuccess) {                                        \
      std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); \
      return 1;                                                    \
    }                                                              \
  } while (0)

inline long long median(std::vector<long long> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// After a timed launch: waits for its end event, checks the launch and reads the one 32-bit result
// it left at `device_value` (a checksum). 0, or 1 after printing the failed call.
inline int finish_and_read(cudaEvent_t done, const uint32_t* device_value, uint32_t& value) {
  MICRO_CHECK(cudaEventSynchronize(done));
  MICRO_CHECK(cudaGetLastError());
  MICRO_CHECK(cudaMemcpy(&value, device_value, sizeof value, cudaMemcpyDeviceToHost));
  return 0;
}

// An mbarrier arrival without release semantics: formally racy for a stage whose stores it hands
// over, timed by the micro-benchmarks against the kernels' releasing mbar_arrive.
__device__ __forceinline__ void mbar_arrive_relaxed(uint64_t* bar) {
  asm volatile("mbarrier.arrive.relaxed.cta.shared::cta.b64 _, [%0];" ::"r"(mlakit::kernels::smem_addr(bar))
               : "memory");
}
