// The layout every kernel of both ops keeps in a workspace, so that one workspace can serve any
// plan, one after the other: the first kCounterBytes hold arrival counters (zero when the
// workspace is allocated, zero again after every call), and whatever a kernel keeps per call
// (partial results) starts after them. A counter region that moved with the shape would land on
// an earlier call's partials, which are not zero. Host-safe.
#pragma once

#include <cstddef>

namespace mlakit::workspace {

constexpr size_t kCounterBytes = 4096;
static_assert(kCounterBytes % 256 == 0, "the partials after the counters stay 256-byte aligned");

}  // namespace mlakit::workspace
