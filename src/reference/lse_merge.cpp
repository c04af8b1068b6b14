#include "reference/lse_merge.h"

#include <cmath>
#include <limits>

namespace mlakit {

void merge_lse_partials(int num_parts, int dim, const double* part_lse, const double* part_o,
                        double* lse, double* o) {
  const double neg_inf = -std::numeric_limits<double>::infinity();
  double m = neg_inf;
  for (int i = 0; i < num_parts; ++i)
    if (part_lse[i] > m) m = part_lse[i];
  for (int d = 0; d < dim; ++d) o[d] = 0.0;
  if (m == neg_inf) {  // every slice empty (or no slices)
    *lse = neg_inf;
    return;
  }
  double sum = 0.0;
  for (int i = 0; i < num_parts; ++i)
    if (part_lse[i] != neg_inf) sum += std::exp2(part_lse[i] - m);
  const double total = m + std::log2(sum);
  *lse = total;
  for (int i = 0; i < num_parts; ++i) {
    if (part_lse[i] == neg_inf) continue;
    const double w = std::exp2(part_lse[i] - total);
    const double* oi = part_o + static_cast<long long>(i) * dim;
    for (int d = 0; d < dim; ++d) o[d] += w * oi[d];
  }
}

}  // namespace mlakit
