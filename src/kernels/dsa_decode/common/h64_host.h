// Host side of a 64-heads-per-CTA launch, shared by the registry entries of v2_fused and v2_fp8,
// whose h64 kernels run the same consumers, merge and compaction: whether a device holds the CTA,
// the workspace (h64_traits.h's Layout) of one problem, and the launch fields that point into it.
// Plain C++.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/format.h"
#include "kernels/common/resources.h"
#include "kernels/dsa_decode/common/ring_plan.h"
#include "kernels/dsa_decode/common/h64_traits.h"

namespace mlakit::dsa_h64 {

// The CTA on `dev`: its shared-memory plan under the per-block limit and kThreads x `registers`
// (the instance's need) in the register file; else the tiling rejected with the shortfall.
template <class T>
Status check_fits(const T& t, const DeviceFacts& dev, int registers) {
  if (kSmemBytes > size_t(dev.smem_per_block_optin))
    return dsa_ring::reject(t, "shared-memory plan " + format_kb(kSmemBytes) +
                                   " (Q 72 KB + P 8 KB + 4 bf16 stages x 36 KB) exceeds the " +
                                   format_kb(size_t(dev.smem_per_block_optin)) + " per-block limit of " +
                                   dev.describe());
  const std::string short_of = kernels::register_shortfall(dev, kThreads, kCtasPerSm, registers);
  return short_of.empty() ? Status::ok() : dsa_ring::reject(t, short_of);
}

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
    a.counters = a.io.counters != nullptr ? a.io.counters : reinterpret_cast<uint32_t*>(bytes + w.base.counters);
    a.part_ml = reinterpret_cast<float2*>(bytes + w.base.part_ml);
    a.part_o = reinterpret_cast<float*>(bytes + w.base.part_o);
  }
  a.slots = reinterpret_cast<int32_t*>(bytes + w.slots);
}

}  // namespace mlakit::dsa_h64
