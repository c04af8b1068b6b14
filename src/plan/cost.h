// Roofline counts of one call of any op: what the bench records' GB/s and TFLOP/s divide by.
#pragma once

#include <cstdint>

namespace mlakit {

struct Cost {
  int64_t rows = 0;           // KV-cache rows (slots) the call reads: the tables' "slots" column
  double flops = 0;           // tensor-core FLOPs of the call
  double bytes = 0;           // the fewest bytes it must move through HBM (inputs + outputs)
  double gathered_bytes = 0;  // the KV rows alone: what the bandwidth figure (GB/s) quotes
};

}  // namespace mlakit
