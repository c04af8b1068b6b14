// The fields every DSA ring kernel's tiling has (v2_fused, v2_fp8, the gather floor): how a row
// splits over CTAs and how the ring that feeds them is built. Each variant's own Tiling derives
// from RingTiling, adds its knobs and names them after these (ring_fields), in the one order the
// names share: s<splits>n<block_n>x<stages>m<merge>[p<producers>][g<gather>] then its own.
// Plain C++.
#pragma once

#include <array>
#include <cstddef>

#include "plan/tiling_fields.h"

namespace mlakit::dsa_ring {

struct RingTiling {
  int num_splits = 16;        // s: CTAs per row at most (split-K over the row's valid slots)
  int block_n = 64;           // n: least slots per split, a multiple of the 32-row stage
  int stages = 2;             // x: 32-row ring stages in shared memory
  int merge_head_groups = 4;  // m: 1, the split rows merge inside the kernel (v1's name field)
  int producers = 1;          // p: producer warps
  int gather = 0;             // g: how a row is gathered (row_ring.h, Gather)
};

// The field table of `T` (a RingTiling): the ring's fields, then `T`'s own `more`.
template <class T, size_t M = 0>
constexpr std::array<TilingField<T>, 6 + M> ring_fields(const std::array<TilingField<T>, M>& more = {}) {
  std::array<TilingField<T>, 6 + M> out = {{
      {'s', &T::num_splits, true, 1, "splits"},
      {'n', &T::block_n, true, 1, "block_n"},
      {'x', &T::stages, true, 1, "stages"},
      {'m', &T::merge_head_groups, true, 1, "merge"},
      {'p', &T::producers, false, 1, "producers"},
      {'g', &T::gather, false, 0, "gather"},
  }};
  for (size_t i = 0; i < M; ++i) out[6 + i] = more[i];
  return out;
}

}  // namespace mlakit::dsa_ring
