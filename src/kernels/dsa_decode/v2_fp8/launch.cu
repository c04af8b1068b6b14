// v2_fp8 host launcher: one kernel per (pipe, work, merge), the shared-memory opt-in once per device
// and instance, then one launch (when rows may split: cooperative, so that a row's CTAs are
// co-resident, or in clusters of a row's CTAs).
#include <iterator>
#include <utility>

#include "kernels/common/launch_once.h"
#include "kernels/dsa_decode/v2_fp8/kernel.cuh"
#include "kernels/dsa_decode/v2_fp8/launch.h"

namespace mlakit::dsa_v2_fp8 {
namespace {

template <int Stages, int Producers, Work W, bool kCluster>
cudaError_t launch_one(const Params& params, cudaStream_t stream) {
  // A split row's CTAs wait for each other to merge (the floor merges nothing): cooperative, or one
  // cluster per (row, head group).
  const bool splits = params.max_splits > 1 && W == Work::kDecode;
  if (kCluster && (!splits || params.max_splits > kMaxClusterSplits)) return cudaErrorInvalidValue;
  kernels::timeline::begin(stream);  // the phase timeline of a MLAKIT_TIMELINE build; else nothing
  const cudaError_t e = kernels::launch_with_smem<dsa_v2_fp8_kernel<Stages, Producers, W, kCluster>>(
      params, dim3(params.max_splits * params.head_groups, params.num_tokens), dim3(kThreadsFor<Producers, kWgs>),
      int(sizeof(SmemPlan<Stages>)), splits && !kCluster, stream, kCluster ? params.max_splits : 1);
  kernels::timeline::end(stream, e, params.max_splits * params.head_groups * params.num_tokens, "dsa_decode.v2_fp8");
  return e;
}

// Calls f.template operator()<Stages, Producers, W, kCluster>() for the compiled instance, or returns
// cudaErrorInvalidValue.
template <Work W, bool kCluster, class F, size_t... I>
cudaError_t with_pipe(Pipe pipe, F&& f, std::index_sequence<I...>) {
  cudaError_t e = cudaErrorInvalidValue;
  (void)((pipe.stages == kFp8Pipes[I].stages && pipe.producers == kFp8Pipes[I].producers &&
          (e = f.template operator()<kFp8Pipes[I].stages, kFp8Pipes[I].producers, W, kCluster>(), true)) ||
         ...);
  return e;
}
template <class F>
cudaError_t with_instance(const Instance& in, F&& f) {
  constexpr auto kAll = std::make_index_sequence<std::size(kFp8Pipes)>{};
  if (in.work == Work::kStreamOnly)
    return in.cluster ? cudaErrorInvalidValue : with_pipe<Work::kStreamOnly, false>(in.pipe, f, kAll);
  return in.cluster ? with_pipe<Work::kDecode, true>(in.pipe, f, kAll) : with_pipe<Work::kDecode, false>(in.pipe, f, kAll);
}

}  // namespace

cudaError_t launch(const Params& params, Instance instance, cudaStream_t stream) {
  return with_instance(instance, [&]<int Stages, int Producers, Work W, bool kCluster>() {
    return launch_one<Stages, Producers, W, kCluster>(params, stream);
  });
}

cudaError_t kernel_attributes(Instance instance, cudaFuncAttributes* attr) {
  *attr = {};
  return with_instance(instance, [&]<int Stages, int Producers, Work W, bool kCluster>() {
    return cudaFuncGetAttributes(attr, dsa_v2_fp8_kernel<Stages, Producers, W, kCluster>);
  });
}

}  // namespace mlakit::dsa_v2_fp8
