// v2_fp8 host launcher of the 64-heads-per-CTA kernel (h64.cuh): one instance and its twin for
// launches of 2-4 splits per row, the shared-memory opt-in once per device and instance, then one
// launch (cooperative when rows may split).
#include "kernels/common/launch_once.h"
#include "kernels/dsa_decode/v2_fp8/h64.cuh"
#include "kernels/dsa_decode/v2_fp8/launch.h"
#include "kernels/dsa_decode/v2_fused/launch.h"

namespace mlakit::dsa_v2_fp8 {

namespace {
template <bool FewSplits>
cudaError_t launch_h64_one(const Params& params, cudaStream_t stream) {
  return kernels::launch_with_smem<h64::dsa_v2_fp8_h64_kernel<FewSplits>>(
      params, dim3(params.max_splits * params.head_groups, params.num_tokens), dim3(dsa_v2::h64::kThreads),
      int(dsa_v2::h64::kSmemBytes), params.max_splits > 1, stream);
}
}  // namespace

cudaError_t launch_h64(const Params& params, cudaStream_t stream) {
  kernels::timeline::begin(stream);  // the phase timeline of a MLAKIT_TIMELINE build; else nothing
  const cudaError_t e = dsa_v2::merges_few_splits(params.max_splits) ? launch_h64_one<true>(params, stream)
                                                                     : launch_h64_one<false>(params, stream);
  kernels::timeline::end(stream, e, params.max_splits * params.head_groups * params.num_tokens,
                         "dsa_decode.v2_fp8.h64");
  return e;
}

cudaError_t kernel_attributes_h64(cudaFuncAttributes* attr) {
  *attr = {};
  return cudaFuncGetAttributes(attr, h64::dsa_v2_fp8_h64_kernel<false>);
}

}  // namespace mlakit::dsa_v2_fp8
