// Host entry of v2_fused (host-safe declarations; defined in launch.cu).
#pragma once

#include <cuda_runtime_api.h>

#include "kernels/dsa_decode/common/row_ring.h"
#include "kernels/dsa_decode/common/h64_traits.h"
#include "kernels/dsa_decode/v2_fused/traits.h"

namespace mlakit::dsa_v2 {

// The compiled kernel of one instantiation: (pipe, gather) with pipe in kPipeChoices, the hybrid
// or the bulk gather and mma.sync, one consumer warpgroup; or two (32 heads per CTA) with pipe in
// kWidePipes and the hybrid gather. Pooled rows (row_ring.h) are compiled for kPooledPipe and the
// hybrid gather, with one or two consumer warpgroups. The 64-head kernel (h64) is its own.
struct Instance {
  Pipe pipe;
  Gather gather;
  Mma mma;
  int wgs = 1;
  bool pooled = false;
};
constexpr Pipe kPooledPipe = {4, 2};
constexpr bool is_pooled_instance(const Instance& in) {
  return in.pooled && in.pipe.stages == kPooledPipe.stages && in.pipe.producers == kPooledPipe.producers &&
         in.gather == Gather::kHybrid && in.mma == Mma::kSync && (in.wgs == 1 || in.wgs == 2);
}

// The `wgs` (blocks of 16 heads per CTA) that marks the 64-heads-per-CTA kernel (h64.cuh), whose
// only instance is Instance{{4, 4}, kCpAsync, kWgmma, 4}.
constexpr int kH64Blocks = dsa_h64::kCtaHeads / kHeads;
constexpr bool is_h64(const Instance& in) {
  return in.wgs == kH64Blocks && in.pipe.stages == dsa_h64::kStages && in.pipe.producers == dsa_h64::kProducers &&
         in.gather == Gather::kCpAsync && in.mma == Mma::kWgmma;
}

// Whether a launch of `in` with `max_splits` CTAs per row runs the instance's twin whose merge
// loads all of a thread's chunks before folding (merges_few_splits): the hybrid gather (not
// pooled) or the h64 kernel. launch() and --explain both ask this.
constexpr bool runs_merge_twin(const Instance& in, int max_splits) {
  return merges_few_splits(max_splits) &&
         (is_h64(in) || (!in.pooled && in.gather == Gather::kHybrid && in.mma == Mma::kSync));
}

// One launch: grid (max_splits x head_groups, T), cooperative when a row may be split (its CTAs wait for each
// other). cudaErrorInvalidValue for an instance that is not compiled.
cudaError_t launch(const Params& params, Instance instance, cudaStream_t stream);

// Registers and local memory of an instance's kernel (for validation and --explain).
cudaError_t kernel_attributes(Instance instance, cudaFuncAttributes* attr);

// The h64 kernel's launch and attributes (launch_h64.cu); launch() and kernel_attributes() route
// an h64 instance here.
cudaError_t launch_h64(const Params& params, cudaStream_t stream);
cudaError_t kernel_attributes_h64(cudaFuncAttributes* attr);

}  // namespace mlakit::dsa_v2
