// The DSA kernels' use of the workspace layout every kernel keeps (kernels/common/workspace.h):
// two arrival counters per counted block of a token's row in the first kCounterBytes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/common/workspace.h"

namespace mlakit::dsa_workspace {

using workspace::kCounterBytes;
// Tokens whose counters fit: rows are split only while T x splits fits the co-resident CTAs, far
// below this on every supported chip; validation checks it.
constexpr int kMaxCountedTokens = int(kCounterBytes / (2 * sizeof(uint32_t)));  // 512

}  // namespace mlakit::dsa_workspace
