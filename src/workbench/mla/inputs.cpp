// MlaBench::Inputs: a workload's host inputs, their device copies in the workload's layout, the
// reference and the comparators. The device cache is the workload's whole cache, set to NaN
// (0xFF bytes) and then given the pages requests use, copied run by run of consecutive page ids.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/cuda_status.h"
#include "reference/compare.h"
#include "workbench/device_buffer.h"
#include "workbench/mla/bench.h"

namespace mlakit {

struct MlaBench::Inputs::Device {
  // Combined layout: q holds [b, s_q, h, 576] and ckv the [num_pages, page_size, 576] cache;
  // separate: q / q_pe and ckv / kpe hold the four tensors.
  DeviceBuffer q, q_pe, ckv, kpe, block_table, seqlens, out, lse;
};

MlaBench::Inputs::Inputs() = default;
MlaBench::Inputs::~Inputs() = default;

namespace {

constexpr size_t kBf16 = 2;

// Copies `rows` rows of `width` elements from host rows `src_pitch` elements apart into a dense
// device array.
Status copy_rows(void* dst, const uint16_t* src, int64_t src_pitch, int64_t width, int64_t rows, const char* what) {
  return cuda_status(cudaMemcpy2D(dst, size_t(width) * kBf16, src, size_t(src_pitch) * kBf16, size_t(width) * kBf16,
                                  size_t(rows), cudaMemcpyHostToDevice),
                     what);
}

uint16_t* at(const DeviceBuffer& b, int64_t elems) { return static_cast<uint16_t*>(b.data()) + elems; }

}  // namespace

Status MlaBench::Inputs::upload_queries() {
  const MlaProblem& p = workload_.problem;
  const int64_t C = p.head_dim_ckv, R = p.head_dim_kpe, D = C + R;
  const int64_t rows = int64_t(p.batch) * p.seq_q * p.num_heads;
  Device& d = *dev_;
  if (workload_.layout == MlaLayout::kCombined) return d.q.upload(host_.q, "q upload");
  MLAKIT_RETURN_IF_ERROR(d.q.reserve(size_t(rows * C) * kBf16, "q_nope"));
  MLAKIT_RETURN_IF_ERROR(d.q_pe.reserve(size_t(rows * R) * kBf16, "q_pe"));
  MLAKIT_RETURN_IF_ERROR(copy_rows(d.q.data(), host_.q.data(), D, C, rows, "q_nope upload"));
  return copy_rows(d.q_pe.data(), host_.q.data() + C, D, R, rows, "q_pe upload");
}

// The whole cache NaN, then the used pages, one copy per run of consecutive page ids.
Status MlaBench::Inputs::upload_cache() {
  const MlaProblem& p = workload_.problem;
  const int64_t C = p.head_dim_ckv, R = p.head_dim_kpe, D = C + R, P = p.page_size;
  const bool combined = workload_.layout == MlaLayout::kCombined;
  Device& d = *dev_;
  const int64_t rows = p.num_rows();
  MLAKIT_RETURN_IF_ERROR(d.ckv.reserve(size_t(rows * (combined ? D : C)) * kBf16, "cache"));
  MLAKIT_RETURN_IF_ERROR(cuda_status(cudaMemset(d.ckv.data(), 0xFF, d.ckv.bytes()), "cache (NaN fill)"));
  if (!combined) {
    MLAKIT_RETURN_IF_ERROR(d.kpe.reserve(size_t(rows * R) * kBf16, "kpe_cache"));
    MLAKIT_RETURN_IF_ERROR(cuda_status(cudaMemset(d.kpe.data(), 0xFF, d.kpe.bytes()), "kpe_cache (NaN fill)"));
  }
  const std::vector<int32_t>& pages = host_.pages;
  for (size_t k = 0; k < pages.size();) {
    size_t end = k + 1;
    while (end < pages.size() && pages[end] == pages[end - 1] + 1) ++end;
    const uint16_t* src = host_.cache.data() + int64_t(k) * P * D;
    const int64_t first_row = int64_t(pages[k]) * P, run_rows = int64_t(end - k) * P;
    if (combined) {
      MLAKIT_RETURN_IF_ERROR(copy_rows(at(d.ckv, first_row * D), src, D, D, run_rows, "cache upload"));
    } else {
      MLAKIT_RETURN_IF_ERROR(copy_rows(at(d.ckv, first_row * C), src, D, C, run_rows, "ckv_cache upload"));
      MLAKIT_RETURN_IF_ERROR(copy_rows(at(d.kpe, first_row * R), src + C, D, R, run_rows, "kpe_cache upload"));
    }
    k = end;
  }
  return Status::ok();
}

Status MlaBench::Inputs::prepare(const MlaWorkload& w, uint64_t seed, bool upload) {
  MLAKIT_RETURN_IF_ERROR(w.problem.validate());
  const size_t entries = size_t(w.problem.batch) * size_t(w.problem.max_pages);
  if (w.block_table.size() != entries || w.cache_seqlens.size() != size_t(w.problem.batch))
    return Status::invalid_argument("workload " + w.name + ": block_table holds " + std::to_string(w.block_table.size()) +
                                    " entries and cache_seqlens " + std::to_string(w.cache_seqlens.size()) +
                                    ", expected b * max_pages = " + std::to_string(entries) + " and b");
  workload_ = w;
  reference_.reset();
  make_mla_host_data(w, seed, &host_);
  if (!upload) return Status::ok();
  if (!dev_) dev_ = std::make_unique<Device>();
  Device& d = *dev_;
  MLAKIT_RETURN_IF_ERROR(upload_queries());
  MLAKIT_RETURN_IF_ERROR(upload_cache());
  MLAKIT_RETURN_IF_ERROR(d.block_table.upload(w.block_table, "block_table upload"));
  MLAKIT_RETURN_IF_ERROR(d.seqlens.upload(w.cache_seqlens, "cache_seqlens upload"));
  const size_t queries = size_t(w.problem.batch) * w.problem.seq_q * w.problem.num_heads;
  MLAKIT_RETURN_IF_ERROR(d.out.reserve(queries * w.problem.head_dim_ckv * kBf16, "output"));
  return d.lse.reserve(queries * sizeof(float), "lse");
}

MlaTensors MlaBench::Inputs::tensors() const {
  MlaTensors t;
  if (!dev_) return t;
  const MlaProblem& p = workload_.problem;
  const Device& d = *dev_;
  t.q_nope = d.q.data();
  t.ckv_cache = d.ckv.data();
  if (workload_.layout == MlaLayout::kCombined) {  // views of the 576-wide buffers
    const int64_t C = p.head_dim_ckv, D = C + p.head_dim_kpe, H = p.num_heads;
    t.q_pe = at(d.q, C);
    t.kpe_cache = at(d.ckv, C);
    t.q_nope_stride_h = t.q_pe_stride_h = D;
    t.q_nope_stride_s = t.q_pe_stride_s = H * D;
    t.q_nope_stride_b = t.q_pe_stride_b = p.seq_q * H * D;
    t.ckv_stride_row = t.kpe_stride_row = D;
    t.ckv_stride_page = t.kpe_stride_page = p.page_size * D;
  } else {
    t.q_pe = d.q_pe.data();
    t.kpe_cache = d.kpe.data();
  }
  t.block_table = static_cast<const int32_t*>(d.block_table.data());
  t.cache_seqlens = static_cast<const int32_t*>(d.seqlens.data());
  t.output = d.out.data();
  t.lse = static_cast<float*>(d.lse.data());
  t.sm_scale = workload_.sm_scale;
  return t;
}

Status MlaBench::Inputs::check(cudaStream_t stream) {
  if (!dev_) return Status::unsupported("check: the inputs were not uploaded (no CUDA device)");
  const MlaTensors t = tensors();
  return mla_check_inputs(workload_.problem, t.block_table, 0, t.cache_seqlens, stream);
}

Status MlaBench::Inputs::reference_output(const MlaReferenceOutput** out) {
  if (!reference_) {
    auto ref = std::make_unique<MlaReferenceOutput>();
    MLAKIT_RETURN_IF_ERROR(mla_reference(host_.problem, host_.tensors(), ref.get()));
    reference_ = std::move(ref);
  }
  *out = reference_.get();
  return Status::ok();
}

// output: bf16 against the fp64 reference, contest rule; lse: fp32, -inf allowed where expected.
Status MlaBench::Inputs::outputs(std::vector<CallOutput>* out) {
  if (!dev_) return Status::unsupported("outputs: the inputs were not uploaded (no CUDA device)");
  const MlaReferenceOutput* ref = nullptr;
  MLAKIT_RETURN_IF_ERROR(reference_output(&ref));
  const MlaProblem& p = workload_.problem;
  const int64_t queries = int64_t(p.batch) * p.seq_q * p.num_heads, elems = queries * p.head_dim_ckv;
  *out = {{"output", dev_->out.data(), size_t(elems) * kBf16,
           [ref, elems](const void* host) {
             return compare_contest_bf16(static_cast<const uint16_t*>(host), ref->output.data(), elems);
           }},
          {"lse", dev_->lse.data(), size_t(queries) * sizeof(float), [ref, queries](const void* host) {
             return compare_contest(static_cast<const float*>(host), ref->lse.data(), queries, Tolerance{}, true);
           }}};
  return Status::ok();
}

// Queries that see no row (per (b, i), not per head) and the largest lse.
Status MlaBench::Inputs::reference(std::string* columns) {
  const MlaReferenceOutput* ref = nullptr;
  MLAKIT_RETURN_IF_ERROR(reference_output(&ref));
  int64_t empty = 0;
  double max_lse = -INFINITY;
  for (double l : ref->lse) {
    if (std::isinf(l)) ++empty;
    else max_lse = std::max(max_lse, l);
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%13lld %10.3f", (long long)(empty / workload_.problem.num_heads), max_lse);
  *columns = buf;
  return Status::ok();
}

std::string MlaBench::reference_header() {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%13s %10s", "empty_queries", "max_lse");
  return buf;
}

}  // namespace mlakit
