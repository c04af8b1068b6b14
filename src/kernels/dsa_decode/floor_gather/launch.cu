// floor_gather host launcher: shared-memory opt-in once per device and instantiation, one launch.
#include <iterator>
#include <utility>

#include "kernels/common/launch_once.h"
#include "kernels/dsa_decode/floor_gather/kernel.cuh"
#include "kernels/dsa_decode/floor_gather/launch.h"

namespace mlakit::dsa_floor {
namespace {

template <Gather G, int Stages, int Producers>
cudaError_t launch_one(const Params& params, cudaStream_t stream) {
  constexpr int smem = int(sizeof(SmemPlan<Stages>));
  constexpr auto kernel = dsa_floor_kernel<G, Stages, Producers>;
  if (cudaError_t e = kernels::opt_in_smem_once<kernel>(smem); e != cudaSuccess) return e;
  kernel<<<dim3(params.max_splits, params.num_tokens), kThreadsFor<Producers>, smem, stream>>>(params);
  return cudaGetLastError();
}

template <Gather G, size_t... I>
cudaError_t launch_pipe(const Params& params, Pipe pipe, cudaStream_t stream, std::index_sequence<I...>) {
  static_assert(sizeof...(I) == std::size(kPipeChoices));
  cudaError_t e = cudaErrorInvalidValue;
  (void)((pipe.stages == kPipeChoices[I].stages && pipe.producers == kPipeChoices[I].producers &&
          (e = launch_one<G, kPipeChoices[I].stages, kPipeChoices[I].producers>(params, stream), true)) ||
         ...);
  return e;
}

}  // namespace

cudaError_t launch(const Params& params, Pipe pipe, Gather gather, cudaStream_t stream) {
  constexpr auto kAll = std::make_index_sequence<std::size(kPipeChoices)>{};
  switch (gather) {
    case Gather::kBulk: return launch_pipe<Gather::kBulk>(params, pipe, stream, kAll);
    case Gather::kCpAsync: return launch_pipe<Gather::kCpAsync>(params, pipe, stream, kAll);
    case Gather::kHybrid: return launch_pipe<Gather::kHybrid>(params, pipe, stream, kAll);
    case Gather::kLdg:
      dsa_floor_ldg_kernel<<<dim3(params.max_splits, params.num_tokens), kLdgThreads, 0, stream>>>(params);
      return cudaGetLastError();
  }
  return cudaErrorInvalidValue;
}

}  // namespace mlakit::dsa_floor
