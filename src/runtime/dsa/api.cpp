// The public DSA entry points: plan (kernel + tiling + workspace), run (validate tensors, launch)
// and the checked mode for indices.
#include <cmath>
#include <cstdint>

#include "base/cuda_status.h"
#include "kernels/dsa_decode/check_indices.h"
#include "mlakit/device.h"
#include "mlakit/dsa.h"
#include "plan/dsa/indices.h"
#include "runtime/registry.h"
#include "runtime/tune_cache.h"

namespace mlakit {
namespace {

Status check_pointer(const void* ptr, const char* name) {
  if (ptr == nullptr) return Status::invalid_argument(std::string(name) + ": null pointer");
  if (reinterpret_cast<uintptr_t>(ptr) % 16 != 0)
    return Status::invalid_argument(std::string(name) + ": must be 16-byte aligned (rows are read "
                                    "with 16-byte copies)");
  return Status::ok();
}

// A row stride (elements of 2 bytes) must keep every row 16-byte aligned and not overlap rows.
Status check_stride(int64_t stride, int64_t min_elems, const char* name) {
  if (stride < min_elems)
    return Status::invalid_argument(std::string(name) + ": expected >= " + std::to_string(min_elems) +
                                    " elements, got " + std::to_string(stride));
  if (stride % 8 != 0)
    return Status::invalid_argument(std::string(name) + ": must be a multiple of 8 elements (16 bytes), got " +
                                    std::to_string(stride));
  return Status::ok();
}

int64_t or_default(int64_t stride, int64_t contiguous) { return stride == 0 ? contiguous : stride; }

}  // namespace

Status dsa_plan(const DsaProblem& problem, const DsaPlanOptions& options, DsaPlan* plan) {
  if (plan == nullptr) return Status::invalid_argument("plan: null pointer");
  MLAKIT_RETURN_IF_ERROR(problem.validate());
  const std::string key = options.kernel_key.empty() ? default_dsa_kernel_key() : options.kernel_key;
  const DsaKernel* kernel = find_dsa_kernel(key);
  if (kernel == nullptr) return Status::not_found("kernel_key: no kernel registered as '" + key + "'");
  int device = options.device;
  if (device < 0 && cudaGetDevice(&device) != cudaSuccess) {
    cudaGetLastError();
    return Status::unsupported("no CUDA device is visible (no GPU or no driver)");
  }
  DeviceFacts dev;
  MLAKIT_RETURN_IF_ERROR(cached_device_facts(device, &dev));
  MLAKIT_RETURN_IF_ERROR(check_kernel_arch(*kernel, dev));

  DsaTiling tiling;
  if (options.tiling != nullptr) {
    tiling = *options.tiling;
  } else {
    // A tuned entry is used when present and still valid; any cache problem falls back silently.
    DsaTiling tuned;
    if (tuned_tiling(dev.name, key, problem, &tuned).is_ok() &&
        kernel->validate(problem, tuned, dev).is_ok())
      tiling = tuned;
    else
      tiling = kernel->default_tiling(problem, dev);
  }
  MLAKIT_RETURN_IF_ERROR(kernel->validate(problem, tiling, dev));
  plan->problem = problem;
  plan->kernel_key = key;
  plan->tiling = tiling;
  plan->workspace_bytes = kernel->workspace_bytes(problem, tiling);
  return Status::ok();
}

Status dsa_run(const DsaPlan& plan, const DsaTensors& x, void* workspace, size_t workspace_bytes,
               cudaStream_t stream) {
  const DsaProblem& p = plan.problem;
  const DsaKernel* kernel = find_dsa_kernel(plan.kernel_key);
  if (kernel == nullptr)
    return Status::not_found("plan.kernel_key: no kernel registered as '" + plan.kernel_key + "'");
  MLAKIT_RETURN_IF_ERROR(check_pointer(x.q_nope, "q_nope"));
  MLAKIT_RETURN_IF_ERROR(check_pointer(x.q_pe, "q_pe"));
  MLAKIT_RETURN_IF_ERROR(check_pointer(x.ckv_cache, "ckv_cache"));
  MLAKIT_RETURN_IF_ERROR(check_pointer(x.kpe_cache, "kpe_cache"));
  MLAKIT_RETURN_IF_ERROR(check_pointer(x.output, "output"));
  if (x.sparse_indices == nullptr) return Status::invalid_argument("sparse_indices: null pointer");
  if (x.lse == nullptr) return Status::invalid_argument("lse: null pointer");
  if (!std::isfinite(x.sm_scale))
    return Status::invalid_argument("sm_scale: must be finite, got " + std::to_string(x.sm_scale));
  if (workspace_bytes < plan.workspace_bytes || (plan.workspace_bytes > 0 && workspace == nullptr))
    return Status::invalid_argument("workspace: the plan needs " + std::to_string(plan.workspace_bytes) +
                                    " bytes, got " + std::to_string(workspace == nullptr ? 0 : workspace_bytes));
  if (workspace != nullptr && reinterpret_cast<uintptr_t>(workspace) % 16 != 0)
    return Status::invalid_argument("workspace: must be 16-byte aligned");

  DsaTensors t = x;
  const int64_t H = p.num_heads, V = p.head_dim_ckv, R = p.head_dim_kpe;
  t.q_nope_stride_h = or_default(x.q_nope_stride_h, V);
  t.q_nope_stride_t = or_default(x.q_nope_stride_t, H * t.q_nope_stride_h);
  t.q_pe_stride_h = or_default(x.q_pe_stride_h, R);
  t.q_pe_stride_t = or_default(x.q_pe_stride_t, H * t.q_pe_stride_h);
  t.ckv_stride_slot = or_default(x.ckv_stride_slot, V);
  t.kpe_stride_slot = or_default(x.kpe_stride_slot, R);
  t.indices_stride_t = or_default(x.indices_stride_t, p.topk);
  MLAKIT_RETURN_IF_ERROR(check_stride(t.q_nope_stride_h, V, "q_nope_stride_h"));
  MLAKIT_RETURN_IF_ERROR(check_stride(t.q_nope_stride_t, H * V, "q_nope_stride_t"));
  MLAKIT_RETURN_IF_ERROR(check_stride(t.q_pe_stride_h, R, "q_pe_stride_h"));
  MLAKIT_RETURN_IF_ERROR(check_stride(t.q_pe_stride_t, H * R, "q_pe_stride_t"));
  MLAKIT_RETURN_IF_ERROR(check_stride(t.ckv_stride_slot, V, "ckv_stride_slot"));
  MLAKIT_RETURN_IF_ERROR(check_stride(t.kpe_stride_slot, R, "kpe_stride_slot"));
  if (t.indices_stride_t < p.topk)
    return Status::invalid_argument("indices_stride_t: expected >= topk (" + std::to_string(p.topk) +
                                    "), got " + std::to_string(t.indices_stride_t));
  return kernel->launch(p, plan.tiling, t, workspace, stream);
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
