#include "runtime/mla/layout.h"

#include <cmath>
#include <cstdint>
#include <string>

#include "plan/mla/semantics.h"

namespace mlakit::mla_layout {

namespace {

Status check_int_pointer(const void* ptr, const char* name) {
  if (ptr == nullptr) return Status::invalid_argument(std::string(name) + ": null pointer");
  if (reinterpret_cast<uintptr_t>(ptr) % 4 != 0)
    return Status::invalid_argument(std::string(name) + ": must be 4-byte aligned");
  return Status::ok();
}

// One stride of a dimension of `extent` entries: kept when given for a dimension that is used,
// else the contiguous value. Dimensions nest: a stride is at least the extent of the one inside it
// (`inner_count` entries `*inner_stride` apart, or `width` elements for the innermost).
struct StrideRule {
  int64_t* stride;
  int64_t given;
  int64_t extent;
  const int64_t* inner_stride;  // null for the innermost strided dimension
  int64_t inner_count;          // entries of the inner dimension, or the row width
  const char* name;
};

Status apply(const StrideRule& r) {
  if (r.given == 0 || r.extent == 1) return Status::ok();  // *r.stride holds the contiguous value
  *r.stride = r.given;
  const int64_t min_elems = r.inner_count * (r.inner_stride ? *r.inner_stride : 1);
  return check_row_stride(r.given, min_elems, r.name);
}

}  // namespace

Status check_pointers(const MlaTensors& x) {
  MLAKIT_RETURN_IF_ERROR(check_row_pointer(x.q_nope, "q_nope"));
  MLAKIT_RETURN_IF_ERROR(check_row_pointer(x.q_pe, "q_pe"));
  MLAKIT_RETURN_IF_ERROR(check_row_pointer(x.ckv_cache, "ckv_cache"));
  MLAKIT_RETURN_IF_ERROR(check_row_pointer(x.kpe_cache, "kpe_cache"));
  MLAKIT_RETURN_IF_ERROR(check_int_pointer(x.block_table, "block_table"));
  MLAKIT_RETURN_IF_ERROR(check_int_pointer(x.cache_seqlens, "cache_seqlens"));
  MLAKIT_RETURN_IF_ERROR(check_row_pointer(x.output, "output"));
  MLAKIT_RETURN_IF_ERROR(check_int_pointer(x.lse, "lse"));
  if (x.counters != nullptr && !aligned(x.counters))  // optional; its 16-byte rule is the workspace's
    return Status::invalid_argument("counters: must be 16-byte aligned");
  if (!std::isfinite(x.sm_scale))
    return Status::invalid_argument("sm_scale: must be finite, got " + std::to_string(x.sm_scale));
  return Status::ok();
}

Status resolve_strides(const MlaProblem& p, const MlaTensors& x, MlaTensors* t) {
  MlaTensors zeros = x;  // every stride contiguous first
  zeros.q_nope_stride_b = zeros.q_nope_stride_s = zeros.q_nope_stride_h = 0;
  zeros.q_pe_stride_b = zeros.q_pe_stride_s = zeros.q_pe_stride_h = 0;
  zeros.ckv_stride_page = zeros.ckv_stride_row = zeros.kpe_stride_page = zeros.kpe_stride_row = 0;
  zeros.block_table_stride_b = 0;
  *t = mla_resolve_strides(p, zeros);
  const int64_t B = p.batch, S = p.seq_q, H = p.num_heads, V = p.head_dim_ckv, R = p.head_dim_kpe, P = p.page_size;
  const StrideRule rules[] = {  // inner dimensions first: the outer rules read their result
      {&t->q_nope_stride_h, x.q_nope_stride_h, H, nullptr, V, "q_nope_stride_h"},
      {&t->q_nope_stride_s, x.q_nope_stride_s, S, &t->q_nope_stride_h, H, "q_nope_stride_s"},
      {&t->q_nope_stride_b, x.q_nope_stride_b, B, &t->q_nope_stride_s, S, "q_nope_stride_b"},
      {&t->q_pe_stride_h, x.q_pe_stride_h, H, nullptr, R, "q_pe_stride_h"},
      {&t->q_pe_stride_s, x.q_pe_stride_s, S, &t->q_pe_stride_h, H, "q_pe_stride_s"},
      {&t->q_pe_stride_b, x.q_pe_stride_b, B, &t->q_pe_stride_s, S, "q_pe_stride_b"},
      {&t->ckv_stride_row, x.ckv_stride_row, P, nullptr, V, "ckv_stride_row"},
      {&t->ckv_stride_page, x.ckv_stride_page, p.num_pages, &t->ckv_stride_row, P, "ckv_stride_page"},
      {&t->kpe_stride_row, x.kpe_stride_row, P, nullptr, R, "kpe_stride_row"},
      {&t->kpe_stride_page, x.kpe_stride_page, p.num_pages, &t->kpe_stride_row, P, "kpe_stride_page"},
  };
  for (const StrideRule& r : rules) MLAKIT_RETURN_IF_ERROR(apply(r));
  if (x.block_table_stride_b != 0 && B > 1) {
    if (x.block_table_stride_b < p.max_pages)
      return Status::invalid_argument("block_table_stride_b: expected >= max_pages (" + std::to_string(p.max_pages) +
                                      "), got " + std::to_string(x.block_table_stride_b));
    t->block_table_stride_b = x.block_table_stride_b;
  }
  return Status::ok();
}

}  // namespace mlakit::mla_layout
