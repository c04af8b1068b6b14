// What the micro-benchmarks share: a CUDA call checked (on failure: the call and the error on
// stderr, then `return 1` from the enclosing function) and the median of a sample.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

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
