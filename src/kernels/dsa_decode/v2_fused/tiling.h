// v2_fused's tiling: the ring kernels' row split and ring (dsa_decode/common/ring_tiling.h), the
// MMA path, heads per CTA and pooled rows. Its name: s<splits>n<block_n>x<stages>m1, then
// p<producers> g<gather> w<mma> h<heads per CTA> b<pool> where they differ from their defaults
// ("s8n64x4m1p4", "s4n64x4m1p2h32", "s8n64x4m1p4g2w1h64", "s4n32x4m1p2b1"). Plain C++.
#pragma once

#include <string>

#include "kernels/dsa_decode/common/ring_tiling.h"
#include "mlakit/status.h"
#include "plan/tiling_fields.h"

namespace mlakit::dsa_v2 {

struct Tiling : dsa_ring::RingTiling {
  int mma = 0;         // w: 0 mma.sync m16n8k16 (heads = M), 1 wgmma with 64 heads = M (h64 only)
  int cta_heads = 16;  // h: heads per CTA: 16, 32 (two consumer warpgroups on each tile) or 64 (h64)
  int pool = 0;        // b: 1 pools the rows of T <= 8 tokens over the whole grid (h16 and h32)

  std::string name() const;
  static Status parse(const std::string& name, Tiling* out);
};

inline constexpr auto kTilingFields = dsa_ring::ring_fields(std::to_array<TilingField<Tiling>>({
    {'w', &Tiling::mma, false, 0, "mma"},
    {'h', &Tiling::cta_heads, false, 1, "heads per CTA"},
    {'b', &Tiling::pool, false, 0, "pool"},
}));
inline std::string Tiling::name() const { return tiling_name(*this, kTilingFields); }
inline Status Tiling::parse(const std::string& name, Tiling* out) {
  return parse_tiling(name, kTilingFields, "s8n64x4m1p4", out);
}

}  // namespace mlakit::dsa_v2
