// v2_fused: constants and the shared-memory plan (the kernel parameters and the workspace layout
// are the split rows' own, dsa_decode/common/split_params.h). Host-safe (plain C++): the
// validator, --explain and the device code size everything from here.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/common/consumer_h16.h"
#include "kernels/dsa_decode/common/row_ring.h"
#include "kernels/dsa_decode/common/split_params.h"
#include "mlakit/dsa.h"

namespace mlakit::dsa_v2 {

using namespace mlakit::dsa_ring;
using namespace mlakit::dsa_split;
using namespace mlakit::h16;

// Warps 0-3 consume (0-7 with two consumer warpgroups); the warps after them gather rows (the
// first of them also Q).
template <int Producers, int Wgs = 1>
constexpr int kThreadsFor = kConsumerThreads * Wgs + Producers * 32;
// Heads per CTA: 16 per consumer warpgroup; a CTA of 32 heads (two warpgroups, Tiling::
// cta_heads) computes both head blocks from one gathered tile.
// The ring pipes compiled with two consumer warpgroups (hybrid gather, mma.sync only): 288 or 320
// threads, so the register cap is 224 or 204.
constexpr Pipe kWidePipes[] = {{4, 1}, {4, 2}};
constexpr int kCtasPerSm = 1;         // __launch_bounds__ and the co-residency check


// Shared-memory plan of Wgs consumer warpgroups; sizeof(SmemPlan<Stages, Wgs>) is the dynamic
// shared memory of one CTA.
template <int Stages, int Wgs = 1>
struct SmemPlan {
  uint64_t full[Stages];     // the stage's rows arrived
  uint64_t empty[Stages];    // the consumers are done with the stage
  uint64_t q_full;           // Q arrived
  int32_t warp_count[32];
  WgPart wg[Wgs];
  alignas(16) uint16_t ring[Stages][kStageElems];       // gathered rows, bf16 [stage][32][576 + pad]
  int32_t slots[kMaxTopk];                              // this CTA's compacted slots
};
template <int Stages>
using SmemPlanWide = SmemPlan<Stages, 2>;

// Shared memory of a ring depth (0 when no instantiation has it).
constexpr size_t smem_bytes(int stages, int wgs = 1) {
  return wgs == 2 ? ring_smem_bytes<SmemPlanWide>(stages) : ring_smem_bytes<SmemPlan>(stages);
}
static_assert(covers_every_pipe<SmemPlan>(), "every compiled ring depth has a size");
// The register need as ptxas reports it (sm_90a, nvcc 13.0); the registry entry reads the compiled
// kernel's instead when a GPU is present. Two consumer warpgroups: __launch_bounds__ caps them at
// 65536 / threads (224 with one producer warp, 204 with two).
constexpr int documented_registers(int wgs = 1, int producers = 1) {
  if (wgs == 2) return producers == 1 ? 224 : 204;
  return 219;
}

}  // namespace mlakit::dsa_v2
