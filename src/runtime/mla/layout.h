// The layout rules of MlaTensors (docs/mla-contract.md, "Layouts"), stated once: mla_run checks the
// tensors it is given with them, and the Python binding applies the same rules to DLPack metadata
// before it builds an MlaTensors.
//   - q_nope, q_pe, ckv_cache, kpe_cache and output start 16-byte aligned (the row rules of
//     runtime/row_layout.h); block_table, cache_seqlens and lse are non-null and 4-byte aligned.
//   - Innermost dimensions are contiguous. Every other stride is in elements, 0 meaning contiguous;
//     a given stride is a multiple of 8 (16 bytes) and dimensions nest in their order, so rows do
//     not overlap: q_*_stride_h >= width, _s >= h * stride_h, _b >= s_q * stride_s;
//     *_stride_row >= width, *_stride_page >= page_size * stride_row; block_table_stride_b >=
//     max_pages (any int32 stride). The engines' combined 576-wide q and cache pass as views; a
//     transposed q ([b, h, s_q] in memory) does not.
//   - The stride of a dimension of size 1 is never used: it is not checked and reads as contiguous.
#pragma once

#include "mlakit/mla.h"
#include "runtime/row_layout.h"

namespace mlakit::mla_layout {

using namespace row_layout;  // the row checks both ops' layouts share

// Pointers (null, alignment) and sm_scale (finite): "block_table: null pointer",
// "output: must be 16-byte aligned (rows are read with 16-byte copies)".
Status check_pointers(const MlaTensors& tensors);

// The strides a kernel gets: 0 and those of size-1 dimensions replaced by their contiguous value,
// every other one checked by the rules above, naming it: "q_pe_stride_h: expected >= 64 elements,
// got 32". `problem` must be valid.
Status resolve_strides(const MlaProblem& problem, const MlaTensors& given, MlaTensors* resolved);

}  // namespace mlakit::mla_layout
