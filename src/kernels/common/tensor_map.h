// Tensor maps (TMA descriptors) for paged row caches, built on the host and passed to kernels as
// __grid_constant__ parameters (host-safe declarations; tensor_map.cpp encodes them through the
// driver's cuTensorMapEncodeTiled, reached through the runtime, so nothing links libcuda).
#pragma once

#include <cstdint>

namespace mlakit::kernels {

// The 128 opaque bytes of a CUtensorMap (cuda.h), with its alignment, so that kernel parameter
// structs can hold one without including the driver header.
struct alignas(128) TensorMapBytes {
  uint64_t words[16];
};

// A paged cache of bf16 rows as a 3D tensor [pages][page_rows][cols] (cols innermost, strides in
// elements) and the box one copy moves: `box_cols` (64: one 128-byte line per row) x `box_rows`
// rows x 1 page, laid out in shared memory in the 128-byte swizzle wgmma reads (16-byte chunk c
// of box row r at c ^ (r % 8), the box at a 1024-byte-aligned address). Returns false, leaving
// `out` untouched, when the driver cannot encode it (an unaligned base or stride, a driver
// without tensor maps): callers then copy rows another way. The last few maps of each thread are
// kept, so a call with the same cache as a recent one does not encode again.
struct PagedRows {
  const void* base;
  int64_t cols, page_rows, pages;
  int64_t row_stride, page_stride;  // elements
  int box_cols, box_rows;
};
bool encode_paged_rows(const PagedRows& rows, TensorMapBytes* out);

}  // namespace mlakit::kernels
