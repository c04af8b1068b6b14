// v2_fp8 host launcher: one kernel per (pipe, work), the shared-memory opt-in once per device and
// instance, then one launch (cooperative when rows may split, so that a row's CTAs are co-resident).
#include <iterator>
#include <utility>

#include "kernels/common/launch_once.h"
#include "kernels/dsa_decode/v2_fp8/kernel.cuh"
#include "kernels/dsa_decode/v2_fp8/launch.h"

namespace mlakit::dsa_v2_fp8 {
namespace {

template <int Stages, int Producers, Work W>
cudaError_t launch_one(const Params& params, cudaStream_t stream) {
  // Cooperative when a row may split: its CTAs wait for each other to merge (the floor merges nothing).
  return kernels::launch_with_smem<dsa_v2_fp8_kernel<Stages, Producers, W>>(
      params, dim3(params.max_splits * params.head_groups, params.num_tokens), dim3(kThreadsFor<Producers, kWgs>), int(sizeof(SmemPlan<Stages>)),
      params.max_splits > 1 && W == Work::kDecode, stream);
}

// Calls f.template operator()<Stages, Producers, W>() for the compiled instance, or returns
// cudaErrorInvalidValue.
template <Work W, class F, size_t... I>
cudaError_t with_pipe(Pipe pipe, F&& f, std::index_sequence<I...>) {
  cudaError_t e = cudaErrorInvalidValue;
  (void)((pipe.stages == kFp8Pipes[I].stages && pipe.producers == kFp8Pipes[I].producers &&
          (e = f.template operator()<kFp8Pipes[I].stages, kFp8Pipes[I].producers, W>(), true)) ||
         ...);
  return e;
}
template <class F>
cudaError_t with_instance(const Instance& in, F&& f) {
  constexpr auto kAll = std::make_index_sequence<std::size(kFp8Pipes)>{};
  return in.work == Work::kStreamOnly ? with_pipe<Work::kStreamOnly>(in.pipe, f, kAll)
                                      : with_pipe<Work::kDecode>(in.pipe, f, kAll);
}

}  // namespace

cudaError_t launch(const Params& params, Instance instance, cudaStream_t stream) {
  return with_instance(instance, [&]<int Stages, int Producers, Work W>() {
    return launch_one<Stages, Producers, W>(params, stream);
  });
}

cudaError_t kernel_attributes(Instance instance, cudaFuncAttributes* attr) {
  *attr = {};
  return with_instance(instance, [&]<int Stages, int Producers, Work W>() {
    return cudaFuncGetAttributes(attr, dsa_v2_fp8_kernel<Stages, Producers, W>);
  });
}

}  // namespace mlakit::dsa_v2_fp8
