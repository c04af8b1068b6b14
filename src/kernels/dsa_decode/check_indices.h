// Checked mode for DSA indices: finds entries that are neither -1 nor a slot of the cache.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace mlakit::dsa_check {

// result[0] = number of bad entries, result[1] = flat position (t * topk + k) of the first one,
// result[2] = its value. `result` is device memory of 3 int64 values, set by the launch.
cudaError_t launch_check_indices(const int32_t* indices, int64_t stride_t, int num_tokens, int topk,
                                 int64_t num_slots, long long* result, cudaStream_t stream);

}  // namespace mlakit::dsa_check
