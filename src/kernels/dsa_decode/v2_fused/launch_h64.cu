// v2_fused host launcher of the 64-heads-per-CTA kernel over the bf16 cache (dsa_decode/common/h64_launch.cuh).
#include "kernels/dsa_decode/v2_fused/h64.cuh"
#include "kernels/dsa_decode/common/h64_launch.cuh"

namespace mlakit::dsa_v2 {

cudaError_t launch_h64(const Params& params, cudaStream_t stream) {
  return dsa_h64::launch_kernel<h64::dsa_v2_h64_kernel<true>, h64::dsa_v2_h64_kernel<false>>(params, stream,
                                                                                       "dsa_decode.v2_fused.h64");
}

cudaError_t kernel_attributes_h64(cudaFuncAttributes* attr) {
  *attr = {};
  return cudaFuncGetAttributes(attr, h64::dsa_v2_h64_kernel<false>);
}

}  // namespace mlakit::dsa_v2
