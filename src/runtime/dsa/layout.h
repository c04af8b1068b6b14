// The layout rules of DsaTensors (docs/dsa-contract.md, "Decisions"), stated once: dsa_run checks
// the tensors it is given with them, and the Python binding applies the same predicates to
// DLPack metadata before it builds a DsaTensors (its messages then speak of Python strides).
// DSA's rules are the row rules every op shares (runtime/row_layout.h).
#pragma once

#include <cstdint>
#include <string>

#include "mlakit/dsa_fp8.h"
#include "runtime/row_layout.h"

namespace mlakit::dsa_layout {

using namespace row_layout;  // the row checks both ops' layouts share

// The FP8 cache's page stride in bytes (0 = contiguous pages), resolved and checked: a multiple of
// 16 that holds page_size rows of 656 bytes.
inline Status resolve_fp8_page_stride(int64_t stride, int page_size, int64_t* out) {
  const int64_t page_bytes = int64_t(page_size) * dsa_fp8::kRowBytes;
  *out = stride == 0 ? page_bytes : stride;
  if (*out >= page_bytes && *out % 16 == 0) return Status::ok();
  return Status::invalid_argument("kv_stride_page: expected a multiple of 16 bytes >= page_size * 656 (" +
                                  std::to_string(page_bytes) + "), got " + std::to_string(*out));
}

}  // namespace mlakit::dsa_layout
