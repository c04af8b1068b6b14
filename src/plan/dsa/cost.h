// Roofline counts of one DSA call: FLOPs and the fewest bytes it must move through HBM.
#pragma once

#include <cstdint>
#include <vector>

#include "mlakit/dsa.h"

namespace mlakit {

struct DsaCost {
  int64_t valid_slots = 0;   // sum over rows of valid indices (gathered rows)
  double flops = 0;          // 2*H*(ckv+kpe) per slot for QK + 2*H*ckv per slot for PV
  double bytes = 0;          // gathered rows + q + indices + output + lse
  double gathered_bytes = 0; // the rows alone (what the spec's GB/s figure uses)
};

DsaCost dsa_cost(const DsaProblem& p, const std::vector<int>& valid_per_row);

}  // namespace mlakit
