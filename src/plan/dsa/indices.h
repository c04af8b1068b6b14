// The checked mode's verdict on sparse_indices, one message for the host and the device checks.
#pragma once

#include <cstdint>

#include "mlakit/dsa.h"

namespace mlakit {

// invalid_argument: "sparse_indices: 3 entries are neither -1 nor a slot in [0, 640); first at
// [1, 7] = 640". `first` is the flat position t * topk + k of the first bad entry.
Status invalid_indices_error(const DsaProblem& problem, int64_t count, int64_t first, int64_t value);

}  // namespace mlakit
