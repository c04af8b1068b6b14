// Host entry of floor_gather (host-safe declaration; defined in launch.cu).
#pragma once

#include <cuda_runtime_api.h>

#include "kernels/dsa_decode/floor_gather/traits.h"

namespace mlakit::dsa_floor {

// One launch, grid (max_splits, T): the ring kernel for (pipe in kPipeChoices, gather), or the
// register kernel for Gather::kLdg (pipe unused). cudaErrorInvalidValue for an uncompiled pipe.
cudaError_t launch(const Params& params, Pipe pipe, Gather gather, cudaStream_t stream);

}  // namespace mlakit::dsa_floor
