// Host entry of v2_fp8 (host-safe declarations; defined in launch.cu).
#pragma once

#include <cuda_runtime_api.h>

#include "kernels/dsa_decode/v2_fp8/traits.h"

namespace mlakit::dsa_v2_fp8 {

// The compiled kernel of one instantiation: pipe in kFp8Pipes, the decode or the gather floor.
struct Instance {
  Pipe pipe;
  Work work;
  bool cluster = false;  // the decode's split rows merge in a cluster of max_splits CTAs
};

// One launch: grid (max_splits x head_groups, T); when a row may be split, cooperative, or in
// clusters of max_splits CTAs (Instance::cluster, 2..kMaxClusterSplits). cudaErrorInvalidValue for
// an instance that is not compiled or a cluster the parameters do not allow.
cudaError_t launch(const Params& params, Instance instance, cudaStream_t stream);

// Registers and local memory of an instance's kernel (validation and --explain).
cudaError_t kernel_attributes(Instance instance, cudaFuncAttributes* attr);

// The 64-heads-per-CTA kernel (h64.cuh, launch_h64.cu): one launch, cooperative when a row may be
// split; params.slots is its workspace of compacted slots (v2_fused's h64 layout).
cudaError_t launch_h64(const Params& params, cudaStream_t stream);
cudaError_t kernel_attributes_h64(cudaFuncAttributes* attr);

}  // namespace mlakit::dsa_v2_fp8
