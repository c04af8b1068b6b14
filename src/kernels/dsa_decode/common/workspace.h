// The layout every DSA kernel keeps in a workspace, so that one workspace can serve any plan of
// the op, one after the other: the first kCounterBytes hold the per-token arrival counters of the
// single-launch kernels (zero when the workspace is allocated, zero again after every call), and
// whatever a kernel keeps per call (partial results) starts after them. A counter region that
// moved with T would land on an earlier call's partials, which are not zero. Host-safe.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mlakit::dsa_workspace {

constexpr size_t kCounterBytes = 4096;
// Tokens whose counters fit: rows are split only while T x splits fits the co-resident CTAs, far
// below this on every supported chip; validation checks it.
constexpr int kMaxCountedTokens = int(kCounterBytes / (2 * sizeof(uint32_t)));  // 512

}  // namespace mlakit::dsa_workspace
