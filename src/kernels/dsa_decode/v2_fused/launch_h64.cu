// v2_fused host launcher of the 64-heads-per-CTA kernel (h64.cuh): one instance and its twin for
// launches of 2-4 splits per row, the shared-memory opt-in once per device and instance, then one
// launch (cooperative when rows may split).
#include "kernels/common/launch_once.h"
#include "kernels/dsa_decode/v2_fused/h64.cuh"
#include "kernels/dsa_decode/v2_fused/launch.h"

namespace mlakit::dsa_v2 {

namespace {
template <bool FewSplits>
cudaError_t launch_h64_one(const Params& params, cudaStream_t stream) {
  return kernels::launch_with_smem<h64::dsa_v2_h64_kernel<FewSplits>>(
      params, dim3(params.max_splits * params.head_groups, params.num_tokens), dim3(h64::kThreads),
      int(h64::kSmemBytes), params.max_splits > 1, stream);
}
}  // namespace

cudaError_t launch_h64(const Params& params, cudaStream_t stream) {
  kernels::timeline::begin(stream);  // the phase timeline of a MLAKIT_TIMELINE build; else nothing
  // runs_merge_twin for the h64 instance: the split count alone decides.
  const cudaError_t e = merges_few_splits(params.max_splits) ? launch_h64_one<true>(params, stream)
                                                             : launch_h64_one<false>(params, stream);
  kernels::timeline::end(stream, e, params.max_splits * params.head_groups * params.num_tokens,
                         "dsa_decode.v2_fused.h64");
  return e;
}

cudaError_t kernel_attributes_h64(cudaFuncAttributes* attr) {
  return cudaFuncGetAttributes(attr, h64::dsa_v2_h64_kernel<false>);
}

}  // namespace mlakit::dsa_v2
