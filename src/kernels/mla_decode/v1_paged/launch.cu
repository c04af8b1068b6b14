// mla_decode v1_paged host launcher: one kernel per compiled pipe (kPipes), the shared-memory
// opt-in once per device and pipe, then one cooperative launch (the CTAs of a split work item
// wait for each other, so the grid must be co-resident).
#include <iterator>
#include <utility>

#include "kernels/common/launch_once.h"
#include "kernels/mla_decode/v1_paged/kernel.cuh"
#include "kernels/mla_decode/v1_paged/launch.h"

namespace mlakit::mla_v1 {
namespace {

template <int Stages, int Producers, bool kMath>
cudaError_t launch_one(const Params& params, cudaStream_t stream) {
  // Always cooperative: the CTAs of a split request wait for each other to merge.
  kernels::timeline::begin(stream);  // the phase timeline of a MLAKIT_TIMELINE build; else nothing
  const cudaError_t e = kernels::launch_with_smem<mla_v1_kernel<Stages, Producers, kMath>>(
      params, dim3(params.ctas_per_group, params.groups), dim3(kThreadsFor<Producers>), int(sizeof(SmemPlan<Stages>)),
      true, stream);
  kernels::timeline::end(stream, e, params.ctas_per_group * params.groups, "mla_decode.v1_paged");
  return e;
}

// Calls f.template operator()<Stages, Producers>() for the compiled pipe, or returns
// cudaErrorInvalidValue.
template <class F, size_t... I>
cudaError_t with_pipe(Pipe pipe, F&& f, std::index_sequence<I...>) {
  cudaError_t e = cudaErrorInvalidValue;
  (void)((pipe.stages == kPipes[I].stages && pipe.producers == kPipes[I].producers &&
          (e = f.template operator()<kPipes[I].stages, kPipes[I].producers>(), true)) ||
         ...);
  return e;
}
template <class F>
cudaError_t with_pipe(Pipe pipe, F&& f) {
  return with_pipe(pipe, f, std::make_index_sequence<std::size(kPipes)>{});
}

}  // namespace

cudaError_t launch(const Params& params, Pipe pipe, Work work, cudaStream_t stream) {
  return with_pipe(pipe, [&]<int Stages, int Producers>() {
    return work == Work::kAttention ? launch_one<Stages, Producers, true>(params, stream)
                                    : launch_one<Stages, Producers, false>(params, stream);
  });
}

cudaError_t kernel_attributes(Pipe pipe, Work work, cudaFuncAttributes* attr) {
  *attr = {};
  return with_pipe(pipe, [&]<int Stages, int Producers>() {
    return work == Work::kAttention ? cudaFuncGetAttributes(attr, mla_v1_kernel<Stages, Producers, true>)
                                    : cudaFuncGetAttributes(attr, mla_v1_kernel<Stages, Producers, false>);
  });
}

}  // namespace mlakit::mla_v1
