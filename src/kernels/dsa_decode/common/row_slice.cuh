// One CTA's slice of one token's top-k row: the whole row is read and its valid slots counted
// (so every CTA of the row derives the same split from the data, on the GPU), and the slots of
// this CTA's split are written densely, in order, into shared memory.
#pragma once

#include <cstdint>

#include "kernels/dsa_decode/common/row_ring.h"

namespace mlakit::dsa_ring {

struct RowSlice {
  int n_valid;  // valid slots of the whole row
  int splits;   // CTAs working on the row
  int count;    // slots of this CTA's split (0 when the CTA has no work)
};

// Reads entries [tid * kPerThread, tid * kPerThread + kPerThread) of the row (16-byte loads when
// the row is aligned), keeps the values in [0, num_slots) and returns how many it kept.
template <int kPerThread>
__device__ __forceinline__ int load_valid(const int32_t* row, int topk, int64_t num_slots,
                                          int32_t (&v)[kPerThread]) {
  static_assert(kPerThread % 4 == 0, "entries are loaded four at a time");
  const int first = threadIdx.x * kPerThread;
  if (reinterpret_cast<uintptr_t>(row) % 16 == 0 && first + kPerThread <= topk) {
#pragma unroll
    for (int j = 0; j < kPerThread; j += 4) {
      const int4 q = __ldg(reinterpret_cast<const int4*>(row + first + j));
      v[j] = q.x, v[j + 1] = q.y, v[j + 2] = q.z, v[j + 3] = q.w;
    }
  } else {
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) v[j] = first + j < topk ? __ldg(row + first + j) : -1;
  }
  int count = 0;
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {
    if (v[j] < 0 || v[j] >= num_slots) v[j] = -1;
    count += v[j] >= 0;
  }
  return count;
}

// All kThreads threads call it. `warp_count` is kThreads / 32 ints of shared scratch. Ends with a
// CTA barrier, after which slots[0, count) holds the split's slots.
template <int kThreads, int kPerThread>
__device__ RowSlice slice_row(const int32_t* row, int topk, int64_t num_slots, int split,
                              int max_splits, int min_rows, int32_t* slots, int* warp_count) {
  constexpr int kWarps = kThreads / 32;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  int32_t v[kPerThread];
  const int mine = load_valid<kPerThread>(row, topk, num_slots, v);
  int inclusive = mine;  // warp-inclusive scan of the per-thread counts
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const int up = __shfl_up_sync(0xffffffffu, inclusive, d);
    if (lane >= d) inclusive += up;
  }
  if (lane == 31) warp_count[warp] = inclusive;
  __syncthreads();
  int pos = inclusive - mine, n = 0;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    const int c = warp_count[w];
    pos += w < warp ? c : 0;
    n += c;
  }
  const RowSplit rs = split_row(n, max_splits, min_rows);
  const int begin = split * rs.rows_per_split;
  const int count = split < rs.splits ? min(rs.rows_per_split, n - begin) : 0;
#pragma unroll
  for (int j = 0; j < kPerThread; ++j)
    if (v[j] >= 0) {
      if (pos >= begin && pos < begin + count) slots[pos - begin] = v[j];
      ++pos;
    }
  __syncthreads();
  return RowSlice{n, rs.splits, count > 0 ? count : 0};
}

}  // namespace mlakit::dsa_ring
