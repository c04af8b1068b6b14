// The one mapping of a CUDA runtime error to a Status, used by every layer that calls the runtime.
#pragma once

#include <string_view>

#include <cuda_runtime_api.h>

#include "mlakit/status.h"

namespace mlakit {

// Ok for cudaSuccess; else kDeviceError "<what>: <CUDA's description>", e.g.
// "cudaMalloc (flush buffer): out of memory".
Status cuda_status(cudaError_t error, std::string_view what);

}  // namespace mlakit
