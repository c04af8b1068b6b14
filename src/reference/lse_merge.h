// The split-K merge of partial attention results, in fp64: the identity every split-K kernel
// relies on, written once so tests can check it against the unsplit reference.
//
// Cut the valid slots S of one (token, head) row into disjoint slices S_1..S_n. Slice i gives
//   lse_i = log2(sum_{j in S_i} exp(s_j))                    (base 2; -inf when S_i is empty)
//   O_i   = sum_{j in S_i} exp(s_j) v_j / sum_{j in S_i} exp(s_j)   (normalized within the slice)
// and the whole row is
//   lse = log2(sum_i 2^lse_i),   O = sum_i 2^(lse_i - lse) O_i.
// Computed stably: m = max_i lse_i, lse = m + log2(sum_i 2^(lse_i - m)). Empty slices
// (lse_i = -inf) weigh 0 and their O_i is never read (it may hold anything, NaN included). When
// every slice is empty: lse = -inf and O = 0, the contract's empty-row result.
#pragma once

namespace mlakit {

// part_lse: [num_parts]; part_o: [num_parts, dim] row-major; writes *lse and o[dim].
void merge_lse_partials(int num_parts, int dim, const double* part_lse, const double* part_o,
                        double* lse, double* o);

}  // namespace mlakit
