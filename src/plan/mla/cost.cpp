#include "plan/mla/cost.h"

#include "plan/mla/semantics.h"

namespace mlakit {

Cost mla_cost(const MlaProblem& p, const std::vector<int32_t>& cache_seqlens) {
  Cost c;
  double query_rows = 0, table_entries = 0;
  for (size_t b = 0; b < cache_seqlens.size() && b < size_t(p.batch); ++b) {
    const int64_t n = mla_request_rows(p, cache_seqlens[b]);
    c.rows += n;
    table_entries += double(mla_request_pages(p, n));
    for (int i = 0; i < p.seq_q; ++i) query_rows += double(mla_query_rows(p, n, i));
  }
  const double width = p.head_dim_ckv + p.head_dim_kpe, H = p.num_heads;
  const double queries = double(p.batch) * p.seq_q * H;  // (b, i, h) triples
  c.flops = query_rows * H * (2.0 * width + 2.0 * p.head_dim_ckv);
  c.gathered_bytes = 2.0 * width * double(c.rows);
  c.bytes = c.gathered_bytes + queries * 2.0 * width   // q_nope + q_pe
            + queries * (2.0 * p.head_dim_ckv + 4.0)    // output + lse
            + 4.0 * double(p.batch) + 4.0 * table_entries;  // cache_seqlens + block_table
  return c;
}

}  // namespace mlakit
