// The public DSA entry points: plan (runtime/planner.h does the work), run (check the tensors and
// the device, launch) and the checked mode for indices.
#include <cmath>
#include <cstdint>

#include "base/cuda_status.h"
#include "kernels/dsa_decode/check_indices.h"
#include "mlakit/dsa.h"
#include "plan/dsa/contract.h"
#include "plan/dsa/indices.h"
#include "runtime/dsa/layout.h"
#include "runtime/planner.h"

namespace mlakit {
namespace {

using DsaPlanner = Planner<DsaProblem>;

int64_t or_default(int64_t stride, int64_t contiguous) { return stride == 0 ? contiguous : stride; }

// The cache pointers of the problem's format: the format's must be set, the other's null.
Status check_cache_pointers(const DsaProblem& p, const DsaTensors& x) {
  using dsa_layout::check_row_pointer;
  if (p.kv == DsaKv::kFp8) {
    if (x.ckv_cache != nullptr || x.kpe_cache != nullptr)
      return Status::invalid_argument(std::string(x.ckv_cache != nullptr ? "ckv_cache" : "kpe_cache") +
                                      ": must be null for the FP8 cache (the problem reads kv_cache)");
    return check_row_pointer(x.kv_cache, "kv_cache");
  }
  if (x.kv_cache != nullptr)
    return Status::invalid_argument("kv_cache: must be null for a bf16 cache (the problem reads ckv_cache and "
                                    "kpe_cache; set DsaProblem.kv = kFp8 for the FP8 cache)");
  MLAKIT_RETURN_IF_ERROR(check_row_pointer(x.ckv_cache, "ckv_cache"));
  return check_row_pointer(x.kpe_cache, "kpe_cache");
}

Status check_pointers(const DsaProblem& p, const DsaTensors& x) {
  using dsa_layout::check_row_pointer;
  MLAKIT_RETURN_IF_ERROR(check_row_pointer(x.q_nope, "q_nope"));
  MLAKIT_RETURN_IF_ERROR(check_row_pointer(x.q_pe, "q_pe"));
  MLAKIT_RETURN_IF_ERROR(check_cache_pointers(p, x));
  MLAKIT_RETURN_IF_ERROR(check_row_pointer(x.output, "output"));
  if (x.sparse_indices == nullptr) return Status::invalid_argument("sparse_indices: null pointer");
  if (x.lse == nullptr) return Status::invalid_argument("lse: null pointer");
  // Optional: the sink is read a float at a time, the counters by 32-bit atomics.
  if (reinterpret_cast<uintptr_t>(x.attn_sink) % 4 != 0)
    return Status::invalid_argument("attn_sink: must be 4-byte aligned");
  if (x.counters != nullptr && !dsa_layout::aligned(x.counters))
    return Status::invalid_argument("counters: must be 16-byte aligned");
  if (!std::isfinite(x.sm_scale))
    return Status::invalid_argument("sm_scale: must be finite, got " + std::to_string(x.sm_scale));
  return Status::ok();
}

Status check_workspace(const DsaPlan& plan, const void* workspace, size_t bytes) {
  const size_t need = plan.workspace_bytes();
  if (bytes < need || (need > 0 && workspace == nullptr))
    return Status::invalid_argument("workspace: the plan needs " + std::to_string(need) + " bytes, got " +
                                    std::to_string(workspace == nullptr ? 0 : bytes));
  if (workspace != nullptr && !dsa_layout::aligned(workspace))
    return Status::invalid_argument("workspace: must be 16-byte aligned");
  return Status::ok();
}

// The strides the kernel uses: 0 ("contiguous") replaced by the contiguous value, then checked.
Status resolve_strides(const DsaProblem& p, const DsaTensors& x, DsaTensors* t) {
  using dsa_layout::check_row_stride;
  *t = x;
  const int64_t H = p.num_heads, V = p.head_dim_ckv, R = p.head_dim_kpe;
  t->q_nope_stride_h = or_default(x.q_nope_stride_h, V);
  t->q_nope_stride_t = or_default(x.q_nope_stride_t, H * t->q_nope_stride_h);
  t->q_pe_stride_h = or_default(x.q_pe_stride_h, R);
  t->q_pe_stride_t = or_default(x.q_pe_stride_t, H * t->q_pe_stride_h);
  t->ckv_stride_slot = or_default(x.ckv_stride_slot, V);
  t->kpe_stride_slot = or_default(x.kpe_stride_slot, R);
  t->indices_stride_t = or_default(x.indices_stride_t, p.topk);
  if (p.kv == DsaKv::kFp8)
    MLAKIT_RETURN_IF_ERROR(dsa_layout::resolve_fp8_page_stride(x.kv_stride_page, p.page_size, &t->kv_stride_page));
  MLAKIT_RETURN_IF_ERROR(check_row_stride(t->q_nope_stride_h, V, "q_nope_stride_h"));
  MLAKIT_RETURN_IF_ERROR(check_row_stride(t->q_nope_stride_t, H * V, "q_nope_stride_t"));
  MLAKIT_RETURN_IF_ERROR(check_row_stride(t->q_pe_stride_h, R, "q_pe_stride_h"));
  MLAKIT_RETURN_IF_ERROR(check_row_stride(t->q_pe_stride_t, H * R, "q_pe_stride_t"));
  MLAKIT_RETURN_IF_ERROR(check_row_stride(t->ckv_stride_slot, V, "ckv_stride_slot"));
  MLAKIT_RETURN_IF_ERROR(check_row_stride(t->kpe_stride_slot, R, "kpe_stride_slot"));
  if (t->indices_stride_t < p.topk)
    return Status::invalid_argument("indices_stride_t: expected >= topk (" + std::to_string(p.topk) +
                                    "), got " + std::to_string(t->indices_stride_t));
  return Status::ok();
}

}  // namespace

Status dsa_plan(const DsaProblem& problem, const DsaPlanOptions& options, DsaPlan* plan) {
  return DsaPlanner::plan_request(
      problem, {options.kernel_key, options.tiling, options.device, options.device_facts}, plan);
}

Status dsa_run(const DsaPlan& plan, const DsaTensors& x, void* workspace, size_t workspace_bytes,
               cudaStream_t stream) {
  if (plan.empty()) return DsaPlanner::check_runnable(plan);
  MLAKIT_RETURN_IF_ERROR(check_pointers(plan.problem(), x));
  MLAKIT_RETURN_IF_ERROR(check_workspace(plan, workspace, workspace_bytes));
  DsaTensors t;
  MLAKIT_RETURN_IF_ERROR(resolve_strides(plan.problem(), x, &t));
  MLAKIT_RETURN_IF_ERROR(DsaPlanner::check_runnable(plan));
  return DsaPlanner::launch(plan, t, workspace, stream);
}

Status dsa_check_indices(const DsaProblem& problem, const int32_t* sparse_indices,
                         int64_t indices_stride_t, cudaStream_t stream) {
  MLAKIT_RETURN_IF_ERROR(problem.validate());
  if (sparse_indices == nullptr) return Status::invalid_argument("sparse_indices: null pointer");
  const int64_t stride = indices_stride_t == 0 ? problem.topk : indices_stride_t;
  long long* result = nullptr;
  MLAKIT_RETURN_IF_ERROR(cuda_status(
      cudaMallocAsync(reinterpret_cast<void**>(&result), 3 * sizeof(long long), stream),
      "dsa_check_indices: cudaMallocAsync"));
  long long host[3] = {0, 0, 0};
  cudaError_t e = dsa_check::launch_check_indices(sparse_indices, stride, problem.num_tokens, problem.topk,
                                                  problem.num_slots(), result, stream);
  if (e == cudaSuccess) e = cudaMemcpyAsync(host, result, sizeof host, cudaMemcpyDeviceToHost, stream);
  cudaFreeAsync(result, stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
  MLAKIT_RETURN_IF_ERROR(cuda_status(e, "dsa_check_indices"));
  if (host[0] == 0) return Status::ok();
  return invalid_indices_error(problem, host[0], host[1], host[2]);
}

}  // namespace mlakit
