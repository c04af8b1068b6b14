// v2_fp8's tiling: the ring kernels' row split and ring (dsa_decode/common/ring_tiling.h), the MMA
// path and heads per CTA of its 64-head kernel, and the cluster merge. Its name:
// s<splits>n<block_n>x<stages>m1, then p<producers> g<gather> w<mma> h<heads per CTA> c<cluster>
// where they differ from their defaults ("s8n64x8m1p4g1", "s8n64x4m1p4g3w1h64", "s8n32x8m1p4g1c1").
// Plain C++.
#pragma once

#include <string>

#include "kernels/dsa_decode/common/ring_tiling.h"
#include "mlakit/status.h"
#include "plan/tiling_fields.h"

namespace mlakit::dsa_v2_fp8 {

struct Tiling : dsa_ring::RingTiling {
  int mma = 0;         // w: 0 the 16-head mma.sync decode, 1 the 64-head wgmma kernel (h64)
  int cta_heads = 16;  // h: heads per CTA: 16, or 64 (h64)
  int cluster = 0;     // c: 1 merges a split row inside a thread-block cluster of its CTAs (2..8)

  std::string name() const;
  static Status parse(const std::string& name, Tiling* out);
};

inline constexpr auto kTilingFields = dsa_ring::ring_fields(std::to_array<TilingField<Tiling>>({
    {'w', &Tiling::mma, false, 0, "mma"},
    {'h', &Tiling::cta_heads, false, 1, "heads per CTA"},
    {'c', &Tiling::cluster, false, 0, "cluster"},
}));
inline std::string Tiling::name() const { return tiling_name(*this, kTilingFields); }
inline Status Tiling::parse(const std::string& name, Tiling* out) {
  return parse_tiling(name, kTilingFields, "s8n64x8m1p4g1", out);
}

}  // namespace mlakit::dsa_v2_fp8
