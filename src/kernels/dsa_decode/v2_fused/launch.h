// Host entry of v2_fused (host-safe declarations; defined in launch.cu).
#pragma once

#include <cuda_runtime_api.h>

#include "kernels/dsa_decode/common/row_ring.h"
#include "kernels/dsa_decode/v2_fused/traits.h"

namespace mlakit::dsa_v2 {

// The compiled kernel of one instantiation: (pipe, gather, mma) with pipe in kPipeChoices and
// gather not kLdg, one consumer warpgroup; or two (32 heads per CTA) with pipe in kWidePipes, the
// hybrid gather and mma.sync.
struct Instance {
  Pipe pipe;
  Gather gather;
  Mma mma;
  int wgs = 1;
};

// One launch: grid (max_splits x head_groups, T), cooperative when a row may be split (its CTAs wait for each
// other). cudaErrorInvalidValue for an instance that is not compiled.
cudaError_t launch(const Params& params, Instance instance, cudaStream_t stream);

// Registers and local memory of an instance's kernel (for validation and --explain).
cudaError_t kernel_attributes(Instance instance, cudaFuncAttributes* attr);

}  // namespace mlakit::dsa_v2
