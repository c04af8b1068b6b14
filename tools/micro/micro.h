// What the micro-benchmarks share: a CUDA call checked (on failure: the call and the error on
// stderr, then `return 1` from the enclosing function) and the median of a sample.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
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
