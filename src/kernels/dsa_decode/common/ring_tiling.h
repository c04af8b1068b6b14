// The fields every DSA ring kernel's tiling has (v2_fused, v2_fp8, the gather floor): how a row
// splits over CTAs and how the ring that feeds them is built. Each variant's own Tiling adds its
// knobs to these and spells them all in its field table (plan/tiling_fields.h), in the one order
// the names share: s<splits>n<block_n>x<stages>m<merge>[p<producers>][g<gather>] then its own.
// Plain C++.
#pragma once

namespace mlakit::dsa_ring {

struct RingTiling {
  int num_splits = 16;        // s: CTAs per row at most (split-K over the row's valid slots)
  int block_n = 64;           // n: least slots per split, a multiple of the 32-row stage
  int stages = 2;             // x: 32-row ring stages in shared memory
  int merge_head_groups = 4;  // m: 1, the split rows merge inside the kernel (v1's name field)
  int producers = 1;          // p: producer warps
  int gather = 0;             // g: how a row is gathered (row_ring.h, Gather)
};

}  // namespace mlakit::dsa_ring
