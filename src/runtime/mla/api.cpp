// The public MLA decode entry points: plan (runtime/planner.h does the work), run (check the
// tensors and the device, launch) and the checked mode for cache_seqlens and block_table.
#include <cstdint>
#include <vector>

#include "base/cuda_status.h"
#include "mlakit/mla.h"
#include "plan/mla/contract.h"
#include "reference/mla/reference.h"
#include "runtime/mla/layout.h"
#include "runtime/planner.h"

namespace mlakit {
namespace {

using MlaPlanner = Planner<MlaProblem>;

Status check_workspace(const MlaPlan& plan, const void* workspace, size_t bytes) {
  const size_t need = plan.workspace_bytes();
  if (bytes < need || (need > 0 && workspace == nullptr))
    return Status::invalid_argument("workspace: the plan needs " + std::to_string(need) + " bytes, got " +
                                    std::to_string(workspace == nullptr ? 0 : bytes));
  if (workspace != nullptr && !mla_layout::aligned(workspace))
    return Status::invalid_argument("workspace: must be 16-byte aligned");
  return Status::ok();
}

// cache_seqlens [b] and the first max_pages entries of each block_table row, on the host.
Status copy_to_host(const MlaProblem& p, const int32_t* block_table, int64_t stride, const int32_t* seqlens,
                    cudaStream_t stream, std::vector<int32_t>* table, std::vector<int32_t>* lengths) {
  table->resize(size_t(p.batch) * size_t(p.max_pages));
  lengths->resize(size_t(p.batch));
  const size_t row_bytes = size_t(p.max_pages) * sizeof(int32_t);
  cudaError_t e = cudaMemcpy2DAsync(table->data(), row_bytes, block_table, size_t(stride) * sizeof(int32_t), row_bytes,
                                    size_t(p.batch), cudaMemcpyDeviceToHost, stream);
  if (e == cudaSuccess)
    e = cudaMemcpyAsync(lengths->data(), seqlens, lengths->size() * sizeof(int32_t), cudaMemcpyDeviceToHost, stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
  return cuda_status(e, "mla_check_inputs");
}

}  // namespace

Status mla_plan(const MlaProblem& problem, const MlaPlanOptions& options, MlaPlan* plan) {
  return MlaPlanner::plan_request(problem, {options.kernel_key, options.tiling, options.device, options.device_facts},
                                  plan);
}

Status mla_run(const MlaPlan& plan, const MlaTensors& x, void* workspace, size_t workspace_bytes,
               cudaStream_t stream) {
  if (plan.empty()) return MlaPlanner::check_runnable(plan);
  MLAKIT_RETURN_IF_ERROR(mla_layout::check_pointers(x));
  MLAKIT_RETURN_IF_ERROR(check_workspace(plan, workspace, workspace_bytes));
  MlaTensors t;
  MLAKIT_RETURN_IF_ERROR(mla_layout::resolve_strides(plan.problem(), x, &t));
  MLAKIT_RETURN_IF_ERROR(MlaPlanner::check_runnable(plan));
  return MlaPlanner::launch(plan, t, workspace, stream);
}

Status mla_check_inputs(const MlaProblem& problem, const int32_t* block_table, int64_t block_table_stride_b,
                        const int32_t* cache_seqlens, cudaStream_t stream) {
  int64_t stride = 0;
  MLAKIT_RETURN_IF_ERROR(mla_check_inputs_args(problem, block_table, block_table_stride_b, cache_seqlens, &stride));
  std::vector<int32_t> table, lengths;
  MLAKIT_RETURN_IF_ERROR(copy_to_host(problem, block_table, stride, cache_seqlens, stream, &table, &lengths));
  return mla_check_inputs_host(problem, table.data(), 0, lengths.data());
}

}  // namespace mlakit
