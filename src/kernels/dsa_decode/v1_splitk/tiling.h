// v1_splitk's tiling: its name s<splits>n<block_n>x<stages>m<merge head groups> ("s16n64x2m4"),
// every field always written. Plain C++ (plan/tiling_fields.h).
#pragma once

#include <string>

#include "mlakit/status.h"
#include "plan/tiling_fields.h"

namespace mlakit::dsa_v1 {

struct Tiling {
  int num_splits = 16;        // s: CTAs per token along topk (split-K); 1 = fused epilogue, no merge
  int block_n = 64;           // n: slots per pipeline tile (64: one n8 column tile of S per warp)
  int stages = 2;             // x: tiles in flight in shared memory
  int merge_head_groups = 4;  // m: CTAs per token in the LSE-merge kernel

  std::string name() const;
  static Status parse(const std::string& name, Tiling* out);
};

inline constexpr auto kTilingFields = std::to_array<TilingField<Tiling>>({
    {'s', &Tiling::num_splits, true, 1, "splits"},
    {'n', &Tiling::block_n, true, 1, "block_n"},
    {'x', &Tiling::stages, true, 1, "stages"},
    {'m', &Tiling::merge_head_groups, true, 1, "merge"},
});
inline std::string Tiling::name() const { return tiling_name(*this, kTilingFields); }
inline Status Tiling::parse(const std::string& name, Tiling* out) {
  return parse_tiling(name, kTilingFields, "s16n64x2m4", out);
}

}  // namespace mlakit::dsa_v1
