// The row rules every op's tensors follow (docs/dsa-contract.md and docs/mla-contract.md,
// "Decisions"): rows are read and written with 16-byte vector copies, so every row start is
// 16-byte aligned and row strides are whole multiples of 16 bytes. Each op's layout.h re-exports
// them with its own rules (runtime/dsa/layout.h, runtime/mla/layout.h); the Python binding applies
// the same predicates to DLPack metadata.
#pragma once

#include <cstdint>

#include "mlakit/status.h"

namespace mlakit::row_layout {

inline constexpr int64_t kRowAlignBytes = 16;

// A pointer a row may start at.
bool aligned(const void* ptr);
// A row stride of `stride` elements of `elem_bytes` bytes that keeps every row aligned: a
// positive multiple of stride_multiple(elem_bytes) elements.
bool whole_rows(int64_t stride, int64_t elem_bytes);
constexpr int64_t stride_multiple(int64_t elem_bytes) { return kRowAlignBytes / elem_bytes; }

// The same rules as a Status naming the argument: "q_nope: null pointer",
// "q_nope: must be 16-byte aligned (rows are read with 16-byte copies)".
Status check_row_pointer(const void* ptr, const char* name);
// A bf16 row stride: at least `min_elems` (rows must not overlap) and whole_rows.
Status check_row_stride(int64_t stride, int64_t min_elems, const char* name);

}  // namespace mlakit::row_layout
