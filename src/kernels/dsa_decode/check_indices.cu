// Checked mode: one thread per index entry; counts bad entries and keeps the first one's position.
#include <climits>

#include "kernels/dsa_decode/check_indices.h"

namespace mlakit::dsa_check {
namespace {

__global__ void reset_kernel(long long* result) {
  result[0] = 0;
  result[1] = LLONG_MAX;
  result[2] = 0;
}

__global__ void check_kernel(const int32_t* indices, int64_t stride_t, int num_tokens, int topk,
                             int64_t num_slots, long long* result) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= (long long)num_tokens * topk) return;
  const long long t = i / topk, k = i % topk;
  const int32_t v = indices[t * stride_t + k];
  if (v == -1 || (v >= 0 && v < num_slots)) return;
  atomicAdd(reinterpret_cast<unsigned long long*>(&result[0]), 1ull);
  atomicMin(&result[1], i);
}

// Reads the value at the first bad position (a second pass keeps the first kernel race-free).
__global__ void first_value_kernel(const int32_t* indices, int64_t stride_t, int topk,
                                   long long* result) {
  if (result[0] == 0) return;
  const long long i = result[1];
  result[2] = indices[(i / topk) * stride_t + i % topk];
}

}  // namespace

cudaError_t launch_check_indices(const int32_t* indices, int64_t stride_t, int num_tokens, int topk,
                                 int64_t num_slots, long long* result, cudaStream_t stream) {
  reset_kernel<<<1, 1, 0, stream>>>(result);
  const long long n = (long long)num_tokens * topk;
  const int threads = 256;
  const long long blocks = (n + threads - 1) / threads;
  if (blocks > 0)
    check_kernel<<<(unsigned)blocks, threads, 0, stream>>>(indices, stride_t, num_tokens, topk,
                                                           num_slots, result);
  first_value_kernel<<<1, 1, 0, stream>>>(indices, stride_t, topk, result);
  return cudaGetLastError();
}

}  // namespace mlakit::dsa_check
