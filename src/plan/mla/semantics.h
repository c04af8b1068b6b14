// The arithmetic of mla.h's semantics, stated once for the reference, the cost, the synthesis, the
// checked mode and the run-time stride checks: how many cache rows a request and each of its
// queries see, how many pages that is, and what a stride of 0 stands for.
#pragma once

#include <algorithm>
#include <cstdint>

#include "mlakit/mla.h"

namespace mlakit {

// n_b: the rows request b holds, cache_seqlens[b] clamped to [0, max_pages * page_size].
inline int64_t mla_request_rows(const MlaProblem& p, int64_t seqlen) {
  return std::clamp<int64_t>(seqlen, 0, p.max_seqlen());
}

// n_{b,i}: the rows query i (0 <= i < s_q) of a request holding `request_rows` sees.
inline int64_t mla_query_rows(const MlaProblem& p, int64_t request_rows, int i) {
  if (!p.causal) return request_rows;
  return std::max<int64_t>(0, request_rows - (p.seq_q - 1 - i));
}

// The leading block_table entries a request of `request_rows` rows uses.
inline int64_t mla_request_pages(const MlaProblem& p, int64_t request_rows) {
  return (request_rows + p.page_size - 1) / p.page_size;
}

// `t` with every stride of 0 replaced by its contiguous value (mla.h, MlaTensors): q and the
// output [b, s_q, h, width], the caches [num_pages, page_size, width], block_table [b, max_pages].
MlaTensors mla_resolve_strides(const MlaProblem& p, const MlaTensors& t);

}  // namespace mlakit
