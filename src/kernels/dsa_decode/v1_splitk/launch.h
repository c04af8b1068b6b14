// Host entry of v1_splitk (host-safe declaration; defined in launch.cu).
#pragma once

#include <cuda_runtime_api.h>

#include "kernels/dsa_decode/v1_splitk/traits.h"

namespace mlakit::dsa_v1 {

// Launches the split kernel (grid T x num_splits) and, for num_splits > 1, the merge kernel
// (grid T x merge_head_groups, programmatic dependent launch). Returns the CUDA error, if any.
cudaError_t launch(const Params& params, int stages, int merge_head_groups, cudaStream_t stream);

// Registers per thread and local-memory bytes of the split kernel for `stages` (0 regs when the
// instantiation does not exist); for validation and --explain.
cudaError_t kernel_attributes(int stages, cudaFuncAttributes* attr);

}  // namespace mlakit::dsa_v1
