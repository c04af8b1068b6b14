// Roofline counts of one MLA decode call (plan/cost.h), from the sequence lengths the host knows.
#pragma once

#include <cstdint>
#include <vector>

#include "mlakit/mla.h"
#include "plan/cost.h"

namespace mlakit {

// rows: sum over requests of n_b (clamped cache_seqlens; every row is read once, whatever s_q);
// gathered_bytes: rows * (ckv + kpe) * 2, what GB/s quotes; bytes: the rows + q + output + lse +
// cache_seqlens + the block_table entries the requests use; flops: 2 * h * (ckv + kpe) for QK and
// 2 * h * ckv for PV per row each query sees (n_{b,i}, causal included).
// `cache_seqlens` holds one entry per request (fewer: the rest count as 0).
Cost mla_cost(const MlaProblem& p, const std::vector<int32_t>& cache_seqlens);

}  // namespace mlakit
