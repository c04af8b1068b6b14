// v2_fused host launcher: one kernel per instance (kPipeChoices x the hybrid and bulk gathers with
// one consumer warpgroup; kWidePipes and the hybrid gather with two), the shared-memory opt-in once
// per device and instance, then one launch (cooperative when rows may split, so that a row's CTAs
// are co-resident).
#include <iterator>
#include <utility>

#include "kernels/common/launch_once.h"
#include "kernels/dsa_decode/v2_fused/kernel.cuh"
#include "kernels/dsa_decode/v2_fused/launch.h"

namespace mlakit::dsa_v2 {
namespace {

template <Gather G, int Stages, int Producers, int Wgs, bool Pooled = false, bool FewSplits = false>
cudaError_t launch_one(const Params& params, cudaStream_t stream) {
  // Cooperative when a row may split (over its own CTAs or, pooled, other tokens' too): its CTAs
  // wait for each other to merge.
  return kernels::launch_with_smem<dsa_v2_kernel<G, Stages, Producers, Wgs, Pooled, FewSplits>>(
      params, dim3(params.max_splits * params.head_groups, params.num_tokens), dim3(kThreadsFor<Producers, Wgs>),
      int(sizeof(SmemPlan<Stages, Wgs>)), params.max_splits > 1 || Pooled, stream);
}

// Calls f.template operator()<G, Stages, Producers, Wgs>() for the compiled instance of `pipes`,
// or returns cudaErrorInvalidValue.
template <Gather G, int Wgs, const Pipe* kPipes, class F, size_t... I>
cudaError_t with_pipe(Pipe pipe, F&& f, std::index_sequence<I...>) {
  cudaError_t e = cudaErrorInvalidValue;
  (void)((pipe.stages == kPipes[I].stages && pipe.producers == kPipes[I].producers &&
          (e = f.template operator()<G, kPipes[I].stages, kPipes[I].producers, Wgs>(), true)) ||
         ...);
  return e;
}
template <class F>
cudaError_t with_instance(const Instance& in, F&& f) {
  if (in.mma != Mma::kSync) return cudaErrorInvalidValue;
  if (in.wgs == 2) {
    if (in.gather != Gather::kHybrid) return cudaErrorInvalidValue;
    return with_pipe<Gather::kHybrid, 2, kWidePipes>(in.pipe, f, std::make_index_sequence<std::size(kWidePipes)>{});
  }
  if (in.wgs != 1) return cudaErrorInvalidValue;
  constexpr auto kAll = std::make_index_sequence<std::size(kPipeChoices)>{};
  switch (in.gather) {
    case Gather::kHybrid: return with_pipe<Gather::kHybrid, 1, kPipeChoices>(in.pipe, f, kAll);
    case Gather::kBulk: return with_pipe<Gather::kBulk, 1, kPipeChoices>(in.pipe, f, kAll);
    default: return cudaErrorInvalidValue;
  }
}

// The ring kernels (one or two consumer warpgroups, pooled or not).
cudaError_t launch_ring(const Params& params, Instance instance, cudaStream_t stream) {
  if (instance.pooled) {
    if (!is_pooled_instance(instance)) return cudaErrorInvalidValue;
    constexpr Pipe kP = kPooledPipe;
    return instance.wgs == 2 ? launch_one<Gather::kHybrid, kP.stages, kP.producers, 2, true>(params, stream)
                             : launch_one<Gather::kHybrid, kP.stages, kP.producers, 1, true>(params, stream);
  }
  const bool twin = runs_merge_twin(instance, params.max_splits);
  return with_instance(instance, [&]<Gather G, int Stages, int Producers, int Wgs>() {
    // The hybrid-gather instances have a twin for rows of 2-4 splits; the tuner's bulk-gather ones
    // keep the general merge (each twin is a kernel to compile).
    if constexpr (G == Gather::kHybrid)
      if (twin) return launch_one<G, Stages, Producers, Wgs, false, true>(params, stream);
    return launch_one<G, Stages, Producers, Wgs>(params, stream);
  });
}

}  // namespace

cudaError_t launch(const Params& params, Instance instance, cudaStream_t stream) {
  if (instance.wgs == kH64Blocks) return is_h64(instance) ? launch_h64(params, stream) : cudaErrorInvalidValue;
  kernels::timeline::begin(stream);  // the phase timeline of a MLAKIT_TIMELINE build; else nothing
  const cudaError_t e = launch_ring(params, instance, stream);
  kernels::timeline::end(stream, e, params.max_splits * params.head_groups * params.num_tokens, "dsa_decode.v2_fused");
  return e;
}

cudaError_t kernel_attributes(Instance instance, cudaFuncAttributes* attr) {
  *attr = {};
  if (instance.wgs == kH64Blocks) return is_h64(instance) ? kernel_attributes_h64(attr) : cudaErrorInvalidValue;
  if (instance.pooled) {
    if (!is_pooled_instance(instance)) return cudaErrorInvalidValue;
    constexpr Pipe kP = kPooledPipe;
    return instance.wgs == 2
               ? cudaFuncGetAttributes(attr, dsa_v2_kernel<Gather::kHybrid, kP.stages, kP.producers, 2, true>)
               : cudaFuncGetAttributes(attr, dsa_v2_kernel<Gather::kHybrid, kP.stages, kP.producers, 1, true>);
  }
  return with_instance(instance, [&]<Gather G, int Stages, int Producers, int Wgs>() {
    return cudaFuncGetAttributes(attr, dsa_v2_kernel<G, Stages, Producers, Wgs>);
  });
}

}  // namespace mlakit::dsa_v2
