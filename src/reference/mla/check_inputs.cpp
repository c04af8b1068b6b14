// The checked mode's verdict on cache_seqlens and block_table: one pass in request order, the first
// bad value named with its position, and the count. mla_check_inputs copies the two tensors to the
// host and calls this.
#include <string>

#include "plan/mla/semantics.h"
#include "reference/mla/reference.h"

namespace mlakit {

namespace {

struct Findings {
  int64_t count = 0;
  std::string first;  // the message of the first bad value
  void add(const std::string& message) {
    if (count++ == 0) first = message;
  }
};

void check_request(const MlaProblem& p, const int32_t* table_row, int32_t seqlen, int b, Findings* f) {
  if (seqlen < 0 || seqlen > p.max_seqlen())
    f->add("cache_seqlens[" + std::to_string(b) + "] = " + std::to_string(seqlen) +
           ": expected a length in [0, " + std::to_string(p.max_seqlen()) + "] (max_pages * page_size)");
  const int64_t pages = mla_request_pages(p, mla_request_rows(p, seqlen));
  for (int64_t k = 0; k < pages; ++k) {
    const int32_t page = table_row[k];
    if (page >= 0 && page < p.num_pages) continue;
    f->add("block_table[" + std::to_string(b) + ", " + std::to_string(k) + "] = " + std::to_string(page) +
           ": expected a page id in [0, " + std::to_string(p.num_pages) + ") (num_pages); request " +
           std::to_string(b) + " uses its first " + std::to_string(pages) + " entries");
  }
}

}  // namespace

Status mla_check_inputs_args(const MlaProblem& problem, const int32_t* block_table, int64_t block_table_stride_b,
                             const int32_t* cache_seqlens, int64_t* stride) {
  MLAKIT_RETURN_IF_ERROR(problem.validate());
  if (block_table == nullptr) return Status::invalid_argument("block_table: null pointer");
  if (cache_seqlens == nullptr) return Status::invalid_argument("cache_seqlens: null pointer");
  *stride = block_table_stride_b == 0 ? problem.max_pages : block_table_stride_b;
  if (*stride < problem.max_pages)
    return Status::invalid_argument("block_table_stride_b: expected >= max_pages (" +
                                    std::to_string(problem.max_pages) + "), got " + std::to_string(*stride));
  return Status::ok();
}

Status mla_check_inputs_host(const MlaProblem& problem, const int32_t* block_table, int64_t block_table_stride_b,
                             const int32_t* cache_seqlens, int64_t* num_bad) {
  int64_t stride = 0;
  MLAKIT_RETURN_IF_ERROR(mla_check_inputs_args(problem, block_table, block_table_stride_b, cache_seqlens, &stride));
  Findings f;
  for (int b = 0; b < problem.batch; ++b) check_request(problem, block_table + b * stride, cache_seqlens[b], b, &f);
  if (num_bad != nullptr) *num_bad = f.count;
  if (f.count == 0) return Status::ok();
  return Status::invalid_argument(f.first + (f.count > 1 ? "; " + std::to_string(f.count) + " bad values in all" : ""));
}

}  // namespace mlakit
