// The gather floor's tiling: the ring kernels' row split and ring (dsa_decode/common/
// ring_tiling.h) and nothing else. Its name: s<splits>n<block_n>x<stages>m1, then p<producers>
// g<gather> where they differ from their defaults ("s4n64x4m1p4", "s4n64x1m1g3"). Plain C++.
#pragma once

#include <string>

#include "kernels/dsa_decode/common/ring_tiling.h"
#include "mlakit/status.h"
#include "plan/tiling_fields.h"

namespace mlakit::dsa_floor {

struct Tiling : dsa_ring::RingTiling {
  std::string name() const;
  static Status parse(const std::string& name, Tiling* out);
};

inline constexpr auto kTilingFields = dsa_ring::ring_fields<Tiling>();
inline std::string Tiling::name() const { return tiling_name(*this, kTilingFields); }
inline Status Tiling::parse(const std::string& name, Tiling* out) {
  return parse_tiling(name, kTilingFields, "s4n64x4m1p4", out);
}

}  // namespace mlakit::dsa_floor
