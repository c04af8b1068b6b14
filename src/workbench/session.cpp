#include "workbench/session.h"

#include <cstring>
#include <vector>

#include <cuda_runtime_api.h>

#include "base/cuda_status.h"
#include "mlakit/device.h"

namespace mlakit {
namespace {

// A device allocation that grows on demand and frees itself.
struct DeviceBuffer {
  void* ptr = nullptr;
  size_t bytes = 0;
  ~DeviceBuffer() {
    if (ptr) cudaFree(ptr);
  }
  Status reserve(size_t want, const char* what) {
    if (want <= bytes) return Status::ok();
    if (ptr) cudaFree(ptr);
    ptr = nullptr;
    bytes = 0;
    MLAKIT_RETURN_IF_ERROR(cuda_status(cudaMalloc(&ptr, want), what));
    bytes = want;
    return Status::ok();
  }
  template <class T>
  Status upload(const std::vector<T>& host, const char* what) {
    MLAKIT_RETURN_IF_ERROR(reserve(host.size() * sizeof(T), what));
    return cuda_status(cudaMemcpy(ptr, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), what);
  }
};

}  // namespace

struct DsaSession::DeviceState {
  DeviceBuffer q_nope, q_pe, ckv, kpe, indices, out, lse, workspace;
  cudaStream_t stream = nullptr;
  ~DeviceState() {
    if (stream) cudaStreamDestroy(stream);
  }
};

DsaSession::DsaSession(uint64_t seed) : seed_(seed), has_device_(device_count() > 0) {}
DsaSession::~DsaSession() = default;

Status DsaSession::prepare(const DsaWorkload& w) {
  MLAKIT_RETURN_IF_ERROR(w.problem.validate());
  if (w.indices.size() != size_t(w.problem.num_tokens) * w.problem.topk)
    return Status::invalid_argument("workload " + w.name + ": indices hold " +
                                    std::to_string(w.indices.size()) + " entries, expected T * topk = " +
                                    std::to_string(size_t(w.problem.num_tokens) * w.problem.topk));
  workload_ = w;
  reference_.reset();
  make_dsa_queries(w, seed_, &host_);
  const std::tuple<int, int> shape{w.problem.num_pages, w.problem.page_size};
  const bool new_caches = shape != cache_shape_;
  if (new_caches) {
    make_dsa_caches(w.problem, seed_, &host_);
    cache_shape_ = shape;
  }
  if (!has_device_) return Status::ok();
  if (!dev_) {
    dev_ = std::make_unique<DeviceState>();
    MLAKIT_RETURN_IF_ERROR(cuda_status(cudaStreamCreateWithFlags(&dev_->stream, cudaStreamNonBlocking),
                                "cudaStreamCreate"));
  }
  DeviceState& d = *dev_;
  if (new_caches) {
    MLAKIT_RETURN_IF_ERROR(d.ckv.upload(host_.ckv, "ckv_cache upload"));
    MLAKIT_RETURN_IF_ERROR(d.kpe.upload(host_.kpe, "kpe_cache upload"));
  }
  MLAKIT_RETURN_IF_ERROR(d.q_nope.upload(host_.q_nope, "q_nope upload"));
  MLAKIT_RETURN_IF_ERROR(d.q_pe.upload(host_.q_pe, "q_pe upload"));
  MLAKIT_RETURN_IF_ERROR(d.indices.upload(w.indices, "sparse_indices upload"));
  const size_t rows = size_t(w.problem.num_tokens) * w.problem.num_heads;
  MLAKIT_RETURN_IF_ERROR(d.out.reserve(rows * w.problem.head_dim_ckv * 2, "output"));
  MLAKIT_RETURN_IF_ERROR(d.lse.reserve(rows * sizeof(float), "lse"));
  return Status::ok();
}

DsaTensors DsaSession::tensors() const {
  DsaTensors t;
  t.q_nope = dev_->q_nope.ptr;
  t.q_pe = dev_->q_pe.ptr;
  t.ckv_cache = dev_->ckv.ptr;
  t.kpe_cache = dev_->kpe.ptr;
  t.sparse_indices = static_cast<const int32_t*>(dev_->indices.ptr);
  t.output = dev_->out.ptr;
  t.lse = static_cast<float*>(dev_->lse.ptr);
  t.sm_scale = workload_.sm_scale;
  return t;
}

Status DsaSession::ensure_workspace(size_t bytes) { return dev_->workspace.reserve(bytes, "workspace"); }

Status DsaSession::reference(const DsaReferenceOutput** out) {
  if (!reference_) {
    auto ref = std::make_unique<DsaReferenceOutput>();
    DsaHostInputs in;
    in.q_nope = host_.q_nope.data();
    in.q_pe = host_.q_pe.data();
    in.ckv = host_.ckv.data();
    in.kpe = host_.kpe.data();
    in.indices = workload_.indices.data();
    in.sm_scale = workload_.sm_scale;
    MLAKIT_RETURN_IF_ERROR(
        dsa_reference(workload_.problem, in, IndexPolicy::kTreatInvalidAsPadding, ref.get()));
    reference_ = std::move(ref);
  }
  *out = reference_.get();
  return Status::ok();
}

GpuCall DsaSession::call(const DsaKernel& kernel, const DsaTiling& tiling) {
  DsaPlan plan{workload_.problem, kernel.info().key, tiling, kernel.workspace_bytes(workload_.problem, tiling)};
  const DsaTensors t = tensors();
  DeviceState* d = dev_.get();
  return [plan, t, d](cudaStream_t stream) {
    return dsa_run(plan, t, d->workspace.ptr, d->workspace.bytes, stream);
  };
}

Status DsaSession::verify(const DsaKernel& kernel, const DsaTiling& tiling, VerifyResult* result) {
  if (!has_device_ || !dev_) return Status::unsupported("verify needs a CUDA device; none is visible");
  int device = 0;
  MLAKIT_RETURN_IF_ERROR(cuda_status(cudaGetDevice(&device), "cudaGetDevice"));
  DeviceFacts facts;
  MLAKIT_RETURN_IF_ERROR(cached_device_facts(device, &facts));
  MLAKIT_RETURN_IF_ERROR(kernel.validate(workload_.problem, tiling, facts));
  MLAKIT_RETURN_IF_ERROR(ensure_workspace(kernel.workspace_bytes(workload_.problem, tiling)));
  const DsaReferenceOutput* ref = nullptr;
  MLAKIT_RETURN_IF_ERROR(reference(&ref));

  DeviceState& d = *dev_;
  const DsaProblem& p = workload_.problem;
  const size_t rows = size_t(p.num_tokens) * p.num_heads;
  const size_t out_elems = rows * p.head_dim_ckv;
  GpuCall run = call(kernel, tiling);
  std::vector<uint16_t> out[2] = {std::vector<uint16_t>(out_elems), std::vector<uint16_t>(out_elems)};
  std::vector<float> lse[2] = {std::vector<float>(rows), std::vector<float>(rows)};
  for (int i = 0; i < 2; ++i) {
    // 0xFF bytes are NaN in bf16 and fp32: an element the kernel does not write fails the check.
    MLAKIT_RETURN_IF_ERROR(cuda_status(cudaMemsetAsync(d.out.ptr, 0xFF, out_elems * 2, d.stream), "poison output"));
    MLAKIT_RETURN_IF_ERROR(cuda_status(cudaMemsetAsync(d.lse.ptr, 0xFF, rows * 4, d.stream), "poison lse"));
    MLAKIT_RETURN_IF_ERROR(run(d.stream));
    MLAKIT_RETURN_IF_ERROR(cuda_status(cudaMemcpyAsync(out[i].data(), d.out.ptr, out_elems * 2,
                                                cudaMemcpyDeviceToHost, d.stream), "output download"));
    MLAKIT_RETURN_IF_ERROR(cuda_status(cudaMemcpyAsync(lse[i].data(), d.lse.ptr, rows * 4,
                                                cudaMemcpyDeviceToHost, d.stream), "lse download"));
    MLAKIT_RETURN_IF_ERROR(cuda_status(cudaStreamSynchronize(d.stream), kernel.info().key.c_str()));
  }
  result->workload = workload_.name;
  result->output = compare_contest_bf16(out[0].data(), ref->output.data(), int64_t(out_elems));
  result->lse = compare_contest(lse[0].data(), ref->lse.data(), int64_t(rows), Tolerance{}, true);
  result->deterministic = out[0] == out[1] && std::memcmp(lse[0].data(), lse[1].data(), rows * 4) == 0;
  return Status::ok();
}

Status DsaSession::time(const DsaKernel& kernel, const DsaTiling& tiling, const TimingConfig& config,
                        TimingResult* result) {
  if (!has_device_ || !dev_) return Status::unsupported("timing needs a CUDA device; none is visible");
  MLAKIT_RETURN_IF_ERROR(ensure_workspace(kernel.workspace_bytes(workload_.problem, tiling)));
  return time_gpu_call(call(kernel, tiling), dev_->stream, config, result);
}

}  // namespace mlakit
