// Host entry of v1_splitk (host-safe declarations; defined in launch.cu).
#pragma once

#include <cuda_runtime_api.h>

#include "kernels/dsa_decode/v1_splitk/traits.h"

namespace mlakit::dsa_v1 {

// Launches the split kernel (grid T x num_splits) and, for num_splits > 1, the merge kernel
// (grid T x merge_head_groups, programmatic dependent launch). `stages` must be one of
// InstantiatedStages; cudaErrorInvalidValue otherwise. Returns the CUDA error, if any.
cudaError_t launch(const Params& params, int stages, int merge_head_groups, cudaStream_t stream);

// The compiled split kernel's attributes for `stages` (registers per thread, local memory), from
// cudaFuncGetAttributes: what validation checks when a GPU is present. cudaErrorInvalidValue for
// a stage count that is not instantiated.
cudaError_t kernel_attributes(int stages, cudaFuncAttributes* attr);

}  // namespace mlakit::dsa_v1
