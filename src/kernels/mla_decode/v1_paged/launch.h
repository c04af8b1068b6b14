// Host entry of mla_decode v1_paged (host-safe declarations; defined in launch.cu).
#pragma once

#include <cuda_runtime_api.h>

#include "kernels/mla_decode/v1_paged/traits.h"

namespace mlakit::mla_v1 {

// What a launch computes: the attention, or only the row stream (the op's gather floor, no math,
// no output).
enum class Work { kAttention, kStreamOnly };

// One cooperative launch, grid (ctas_per_group, groups). cudaErrorInvalidValue for a pipe that
// is not compiled (kPipes).
cudaError_t launch(const Params& params, Pipe pipe, Work work, cudaStream_t stream);

// Registers and local memory of a pipe's kernel (for validation and --explain).
cudaError_t kernel_attributes(Pipe pipe, Work work, cudaFuncAttributes* attr);

// The 64-query-rows-per-CTA kernel (tiling field m64; m64.cuh): one cooperative launch, grid
// (ctas_per_group, groups) with groups = ceil(s_q x heads / 64).
cudaError_t launch_m64(const Params& params, Work work, cudaStream_t stream);
cudaError_t kernel_attributes_m64(Work work, cudaFuncAttributes* attr);

}  // namespace mlakit::mla_v1
