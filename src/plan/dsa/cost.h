// Roofline counts of one DSA call (plan/cost.h): rows = valid slots gathered, FLOPs of QK and PV,
// and the fewest bytes it must move through HBM.
#pragma once

#include <vector>

#include "mlakit/dsa.h"
#include "plan/cost.h"

namespace mlakit {

// The bytes of one slot's cache row: 2 * (ckv + kpe) = 1152 for bf16; for the FP8 cache ckv e4m3
// bytes, one fp32 scale per 128 channels and kpe bf16 = 656 (mlakit/dsa_fp8.h).
double dsa_slot_bytes(const DsaProblem& p);

// rows: sum over rows of valid indices; flops: 2*H*(ckv+kpe) per slot for QK + 2*H*ckv for PV;
// bytes: gathered rows + q + indices + output + lse; gathered_bytes: the rows alone,
// dsa_slot_bytes each (the spec's GB/s figure).
Cost dsa_cost(const DsaProblem& p, const std::vector<int>& valid_per_row);

}  // namespace mlakit
