// MlaProblem::validate, to_string, hash and tune bucket: the contract-level ranges of the MLA decode
// op family and the facts plans key on. What one kernel supports beyond these is that kernel's
// validate().
#include <cstdint>
#include <cstdio>
#include <string>

#include "base/hash.h"
#include "mlakit/mla.h"
#include "plan/mla/contract.h"
#include "plan/mla/semantics.h"

namespace mlakit {

namespace {

Status bad(const char* field, const std::string& expected, int64_t got) {
  return Status::invalid_argument(std::string("MlaProblem.") + field + ": expected " + expected + ", got " +
                                  std::to_string(got));
}

// The smallest power of two >= n (1 for n <= 1).
int round_up_pow2(int n) {
  int r = 1;
  while (r < n && r < (1 << 30)) r *= 2;
  return r;
}

}  // namespace

Status MlaProblem::validate() const {
  if (batch < 1 || batch > 65536) return bad("batch", "a value in [1, 65536]", batch);
  if (seq_q < 1 || seq_q > 4) return bad("seq_q", "a value in [1, 4] (decode, or up to 3 speculative tokens)", seq_q);
  // Any count up to DeepSeek's 128 is a valid call (8: Kimi-K2 at TP 8, DeepSeek at TP 16); which
  // counts a kernel runs is its validate()'s answer (unsupported, not invalid).
  if (num_heads < 1 || num_heads > 128) return bad("num_heads", "a value in [1, 128]", num_heads);
  if (head_dim_ckv != 512) return bad("head_dim_ckv", "512 (the DeepSeek-V2/V3 latent width)", head_dim_ckv);
  if (head_dim_kpe != 64) return bad("head_dim_kpe", "64 (the DeepSeek-V2/V3 rope width)", head_dim_kpe);
  if (page_size < 1 || page_size > 1024) return bad("page_size", "a value in [1, 1024]", page_size);
  if (num_pages < 1) return bad("num_pages", ">= 1", num_pages);
  if (max_pages < 1) return bad("max_pages", ">= 1", max_pages);
  // cache_seqlens are int32: every length a request can hold must be one.
  if (max_seqlen() > int64_t(INT32_MAX))
    return Status::invalid_argument("MlaProblem: max_pages * page_size = " + std::to_string(max_seqlen()) +
                                    " rows; expected at most 2147483647 (cache_seqlens are int32)");
  if (causal != 0 && causal != 1) return bad("causal", "0 or 1", causal);
  return Status::ok();
}

std::string MlaProblem::to_string() const {
  return "b=" + std::to_string(batch) + " s_q=" + std::to_string(seq_q) + " h=" + std::to_string(num_heads) +
         " ckv=" + std::to_string(head_dim_ckv) + " kpe=" + std::to_string(head_dim_kpe) +
         " pages=" + std::to_string(num_pages) + " ps=" + std::to_string(page_size) +
         " max_pages=" + std::to_string(max_pages) + " causal=" + std::to_string(causal);
}

std::string mla_shape_bucket(const MlaProblem& p) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "b%d.s%d.h%d.ckv%d.kpe%d.ps%d.c%d", round_up_pow2(p.batch), p.seq_q,
                p.num_heads, p.head_dim_ckv, p.head_dim_kpe, p.page_size, p.causal);
  return buf;
}

MlaTensors mla_resolve_strides(const MlaProblem& p, const MlaTensors& x) {
  const auto or_default = [](int64_t stride, int64_t contiguous) { return stride == 0 ? contiguous : stride; };
  const int64_t S = p.seq_q, H = p.num_heads, V = p.head_dim_ckv, R = p.head_dim_kpe, P = p.page_size;
  MlaTensors t = x;
  t.q_nope_stride_h = or_default(x.q_nope_stride_h, V);
  t.q_nope_stride_s = or_default(x.q_nope_stride_s, H * V);
  t.q_nope_stride_b = or_default(x.q_nope_stride_b, S * H * V);
  t.q_pe_stride_h = or_default(x.q_pe_stride_h, R);
  t.q_pe_stride_s = or_default(x.q_pe_stride_s, H * R);
  t.q_pe_stride_b = or_default(x.q_pe_stride_b, S * H * R);
  t.ckv_stride_row = or_default(x.ckv_stride_row, V);
  t.ckv_stride_page = or_default(x.ckv_stride_page, P * V);
  t.kpe_stride_row = or_default(x.kpe_stride_row, R);
  t.kpe_stride_page = or_default(x.kpe_stride_page, P * R);
  t.block_table_stride_b = or_default(x.block_table_stride_b, p.max_pages);
  return t;
}

}  // namespace mlakit

size_t std::hash<mlakit::MlaProblem>::operator()(const mlakit::MlaProblem& problem) const noexcept {
  return mlakit::hash_object_bytes(problem);
}
