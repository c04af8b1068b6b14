// DsaProblem::validate, to_string, hash and tune bucket: the contract-level ranges of the DSA op
// family and the facts plans key on. What one kernel supports beyond these (fewer head counts,
// page sizes) is that kernel's validate().
#include <cstdint>
#include <cstdio>
#include <string>

#include "base/hash.h"
#include "mlakit/dsa.h"
#include "plan/dsa/contract.h"
#include "plan/dsa/indices.h"

namespace mlakit {

namespace {

Status bad(const char* field, const std::string& expected, int64_t got) {
  return Status::invalid_argument(std::string("DsaProblem.") + field + ": expected " + expected +
                                  ", got " + std::to_string(got));
}

}  // namespace

Status DsaProblem::validate() const {
  if (num_tokens < 1) return bad("num_tokens", ">= 1", num_tokens);
  if (num_heads != 8 && num_heads != 16 && num_heads != 32 && num_heads != 64 && num_heads != 128)
    return bad("num_heads", "one of 8, 16, 32, 64, 128 (128 query heads over TP 16..1)", num_heads);
  if (head_dim_ckv != 512) return bad("head_dim_ckv", "512 (the DeepSeek-V3.2 latent width)", head_dim_ckv);
  if (head_dim_kpe != 64) return bad("head_dim_kpe", "64 (the DeepSeek-V3.2 rope width)", head_dim_kpe);
  if (page_size < 1) return bad("page_size", ">= 1", page_size);
  if (num_pages < 1) return bad("num_pages", ">= 1", num_pages);
  // Indices are int32 flat slots, so every slot number must be representable.
  if (num_slots() > int64_t(INT32_MAX))
    return Status::invalid_argument("DsaProblem: num_pages * page_size = " + std::to_string(num_slots()) +
                                    " slots; expected at most 2147483647 (indices are int32)");
  if (topk < 1) return bad("topk", ">= 1", topk);
  if (kv != DsaKv::kBf16 && kv != DsaKv::kFp8) return bad("kv", "0 (bf16) or 1 (fp8)", int(kv));
  return Status::ok();
}

std::string DsaProblem::to_string() const {
  return "T=" + std::to_string(num_tokens) + " H=" + std::to_string(num_heads) +
         " ckv=" + std::to_string(head_dim_ckv) + " kpe=" + std::to_string(head_dim_kpe) +
         " pages=" + std::to_string(num_pages) + " ps=" + std::to_string(page_size) +
         " topk=" + std::to_string(topk) + (kv == DsaKv::kFp8 ? " kv=fp8" : "");
}

int dsa_bucket_tokens(int num_tokens) {
  int t = 1;
  while (t < num_tokens && t < (1 << 30)) t *= 2;
  return t;
}

std::string dsa_shape_bucket(const DsaProblem& p) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "T%d.h%d.ckv%d.kpe%d.ps%d.k%d%s", dsa_bucket_tokens(p.num_tokens),
                p.num_heads, p.head_dim_ckv, p.head_dim_kpe, p.page_size, p.topk,
                p.kv == DsaKv::kFp8 ? ".fp8" : "");
  return buf;
}

Status invalid_indices_error(const DsaProblem& problem, int64_t count, int64_t first, int64_t value) {
  return Status::invalid_argument(
      "sparse_indices: " + std::to_string(count) + " entries are neither -1 nor a slot in [0, " +
      std::to_string(problem.num_slots()) + "); first at [" + std::to_string(first / problem.topk) +
      ", " + std::to_string(first % problem.topk) + "] = " + std::to_string(value));
}

}  // namespace mlakit

size_t std::hash<mlakit::DsaProblem>::operator()(const mlakit::DsaProblem& problem) const noexcept {
  return mlakit::hash_object_bytes(problem);
}
