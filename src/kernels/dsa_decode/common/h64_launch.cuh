// The host launch of a 64-heads-per-CTA kernel (h64_cta.cuh's run_cta behind a row source), shared
// by v2_fused's bf16 instance and v2_fp8's: the twin for launches of 2-4 splits per row, the
// shared-memory opt-in once per device and instance, then one launch (cooperative when rows may
// split), inside the phase timeline of a MLAKIT_TIMELINE build.
#pragma once

#include <cuda_runtime_api.h>

#include "kernels/common/launch_once.h"
#include "kernels/common/timeline.cuh"
#include "kernels/dsa_decode/common/h64_traits.h"

namespace mlakit::dsa_h64 {

// FewSplits / ManySplits: the kernel's instances with and without the 2-4-split merge (the split
// count alone decides, runs_merge_twin for an h64 instance). `name` labels the timeline's launch.
template <auto FewSplits, auto ManySplits, class P>
cudaError_t launch_kernel(const P& params, cudaStream_t stream, const char* name) {
  const dim3 grid(unsigned(params.max_splits * params.head_groups), unsigned(params.num_tokens));
  const bool cooperative = params.max_splits > 1;
  kernels::timeline::begin(stream);  // nothing unless MLAKIT_TIMELINE
  const cudaError_t e =
      merges_few_splits(params.max_splits)
          ? kernels::launch_with_smem<FewSplits>(params, grid, dim3(kThreads), int(kSmemBytes), cooperative, stream)
          : kernels::launch_with_smem<ManySplits>(params, grid, dim3(kThreads), int(kSmemBytes), cooperative, stream);
  kernels::timeline::end(stream, e, int(grid.x * grid.y), name);
  return e;
}

}  // namespace mlakit::dsa_h64
