// The workspace of a 64-heads-per-CTA launch (h64_traits.h's Layout) for one problem, and the
// launch fields that point into it; shared by the registry entries of v2_fused and v2_fp8, whose
// h64 kernels run the same merge and compaction. Host-side, plain C++.
#pragma once

#include <cstdint>

#include "kernels/dsa_decode/common/ring_plan.h"
#include "kernels/dsa_decode/v2_fused/h64_traits.h"

namespace mlakit::dsa_v2::h64 {

// `splits` CTAs per (row, head group of 64): counters and partials when rows split, then every
// CTA's compacted slots.
inline Layout workspace_layout(const DsaProblem& p, int splits) {
  return workspace_layout(dsa_ring::head_blocks(p), splits, p.num_tokens, splits * dsa_ring::head_groups(p, kCtaHeads),
                          p.topk);
}

// Points a launch's counters, partials (when the layout has them) and compacted slots into the
// workspace `base` laid out as `w`.
template <class LaunchParams>
void point_into(LaunchParams& a, const Layout& w, void* base) {
  auto* bytes = static_cast<char*>(base);
  if (w.base.bytes > 0) {
    a.counters = reinterpret_cast<uint32_t*>(bytes + w.base.counters);
    a.part_ml = reinterpret_cast<float2*>(bytes + w.base.part_ml);
    a.part_o = reinterpret_cast<float*>(bytes + w.base.part_o);
  }
  a.slots = reinterpret_cast<int32_t*>(bytes + w.slots);
}

}  // namespace mlakit::dsa_v2::h64
