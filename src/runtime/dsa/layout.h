// The layout rules of DsaTensors (docs/dsa-contract.md, "Decisions"), stated once: dsa_run checks
// the tensors it is given with them, and the Python binding applies the same predicates to
// DLPack metadata before it builds a DsaTensors (its messages then speak of Python strides).
// DSA's rules are the row rules every op shares (runtime/row_layout.h).
#pragma once

#include "runtime/row_layout.h"

namespace mlakit::dsa_layout {

using row_layout::aligned;
using row_layout::check_row_pointer;
using row_layout::check_row_stride;
using row_layout::kRowAlignBytes;
using row_layout::stride_multiple;
using row_layout::whole_rows;

}  // namespace mlakit::dsa_layout
