// mla_decode v1_paged host launcher of the 64-query-rows-per-CTA kernel (m64.cuh): the attention
// and its gather floor, each one cooperative launch (the CTAs of a split item wait for each other).
#include "kernels/common/launch_once.h"
#include "kernels/mla_decode/v1_paged/launch.h"
#include "kernels/mla_decode/v1_paged/m64.cuh"

namespace mlakit::mla_v1 {

cudaError_t launch_m64(const Params& params, Work work, cudaStream_t stream) {
  const dim3 grid(params.ctas_per_group, params.groups), block(m64::kThreads);
  const int smem = int(m64::kSmemBytes);
  const bool attention = work == Work::kAttention;
  kernels::timeline::begin(stream);  // the phase timeline of a MLAKIT_TIMELINE build; else nothing
  // The instances that may cut requests into aligned pieces (the seesaw, the default pair, and its
  // floor; schedule.cuh) for batches of at least two CTAs per request: there equal pieces per
  // request balance the CTAs. Their consumers spill and build their wgmma descriptors per thread
  // (the plain instance: no spills, descriptors in uniform registers), so with fewer CTAs per
  // request (b32 at 128 heads and s_q 2, b64 at 128 heads: whole requests or one piece each), where
  // the cut has nothing to balance, the aligned instance is slower and the plain one runs
  // (docs/kernels/mla_decode_v1_paged.md).
  const bool aligned = params.batch >= 2 && 2 * params.batch <= params.ctas_per_group;
  const cudaError_t e =
      params.seesaw && aligned
          ? (attention ? kernels::launch_with_smem<m64::mla_m64_kernel<true, true, true>>(params, grid, block, smem, true, stream)
                       : kernels::launch_with_smem<m64::mla_m64_kernel<false, true, true>>(params, grid, block, smem, true, stream))
      : params.seesaw
          ? (attention ? kernels::launch_with_smem<m64::mla_m64_kernel<true, true>>(params, grid, block, smem, true, stream)
                       : kernels::launch_with_smem<m64::mla_m64_kernel<false, true>>(params, grid, block, smem, true, stream))
          : (attention ? kernels::launch_with_smem<m64::mla_m64_kernel<true, false>>(params, grid, block, smem, true, stream)
                       : kernels::launch_with_smem<m64::mla_m64_kernel<false, false>>(params, grid, block, smem, true, stream));
  kernels::timeline::end(stream, e, params.ctas_per_group * params.groups, "mla_decode.v1_paged.m64");
  return e;
}

cudaError_t kernel_attributes_m64(Work work, cudaFuncAttributes* attr) {
  *attr = {};
  return work == Work::kAttention ? cudaFuncGetAttributes(attr, m64::mla_m64_kernel<true, false>)
                                  : cudaFuncGetAttributes(attr, m64::mla_m64_kernel<false, false>);
}

}  // namespace mlakit::mla_v1
