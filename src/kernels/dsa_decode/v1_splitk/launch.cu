// Host launcher of v1_splitk: shared-memory opt-in once per device, the split kernel, then the
// merge kernel as a programmatic dependent launch so its launch latency hides behind the split grid.
// The split kernel is instantiated for exactly traits.h's InstantiatedStages, by the folds below.
#include <atomic>

#include "kernels/dsa_decode/v1_splitk/kernel.cuh"
#include "kernels/dsa_decode/v1_splitk/launch.h"

namespace mlakit::dsa_v1 {
namespace {

constexpr int kMaxDevices = 64;

template <int Stages>
cudaError_t launch_split(const Params& params, cudaStream_t stream) {
  static std::atomic<bool> opted_in[kMaxDevices];
  constexpr int smem = int(sizeof(SmemPlan<Stages>));
  int device = 0;
  if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  if (device < kMaxDevices && !opted_in[device].load(std::memory_order_acquire)) {
    cudaError_t e = cudaFuncSetAttribute(dsa_splitk_kernel<Stages>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (e != cudaSuccess) return e;
    opted_in[device].store(true, std::memory_order_release);
  }
  const dim3 grid(params.num_tokens, params.num_splits);
  dsa_splitk_kernel<Stages><<<grid, kThreads, smem, stream>>>(params);
  return cudaGetLastError();
}

template <int... S>
cudaError_t launch_split_of(int stages, const Params& params, cudaStream_t stream,
                            std::integer_sequence<int, S...>) {
  cudaError_t e = cudaErrorInvalidValue;
  ((stages == S && ((e = launch_split<S>(params, stream)), true)) || ...);
  return e;
}

template <int... S>
cudaError_t attributes_of(int stages, cudaFuncAttributes* attr, std::integer_sequence<int, S...>) {
  cudaError_t e = cudaErrorInvalidValue;
  ((stages == S && ((e = cudaFuncGetAttributes(attr, dsa_splitk_kernel<S>)), true)) || ...);
  return e;
}

cudaError_t launch_merge(const Params& params, int merge_head_groups, cudaStream_t stream) {
  const int heads_per_group = kHeads / merge_head_groups;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(params.num_tokens, merge_head_groups);
  config.blockDim = dim3(heads_per_group * kMergeThreadsPerHead);
  config.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attr;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, dsa_merge_kernel, params, heads_per_group);
}

}  // namespace

cudaError_t launch(const Params& params, int stages, int merge_head_groups, cudaStream_t stream) {
  const cudaError_t e = launch_split_of(stages, params, stream, InstantiatedStages{});
  if (e != cudaSuccess || params.num_splits == 1) return e;
  return launch_merge(params, merge_head_groups, stream);
}

cudaError_t kernel_attributes(int stages, cudaFuncAttributes* attr) {
  *attr = {};
  return attributes_of(stages, attr, InstantiatedStages{});
}

}  // namespace mlakit::dsa_v1
