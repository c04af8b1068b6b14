// The 64-heads-per-CTA kernel of the DSA decode (tiling field h64; its CTA body h64_cta.cuh, run
// by v2_fused over the bf16 cache and by v2_fp8 over the FP8 cache): constants, the shared-memory
// plan and the workspace additions. Host-safe (plain C++).
//
// Two consumer warpgroups run Hopper's wgmma with the 64 heads as M (Q as the A operand, the
// gathered tile as B), so the tile must sit in wgmma's canonical 128-byte-swizzled layout: a
// stage holds 9 blocks of 64 dims (8 of ckv, 1 of kpe), each 32 slots x 128 bytes, 16-byte chunk
// c of slot r at (c ^ r % 8), two stages interleaved per block into one 64-slot tile. The same
// bytes are the K-major B of S = Q K^T (slots = N) and the MN-major B of O = P V (dims = N).
// Design: docs/kernels/dsa_decode_v2_fused.md.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/common/rows64_layout.h"
#include "kernels/common/consumer_h16.h"
#include "kernels/dsa_decode/common/split_params.h"

namespace mlakit::dsa_h64 {

using namespace mlakit::dsa_split;
using h16::kConsumerThreads;
using h16::kConsumerWarps;
using h16::kTileRows;
using kernels::kDimK;
using kernels::kDimV;
using kernels::kStageRows;

constexpr int kCtaHeads = kernels::rows64::kRows;  // the M of every wgmma
using kernels::rows64::kWgs;                        // consumer warpgroups: a tile of a pair each, dim halves of O
constexpr int kStages = 4;                     // 32-slot stages: two 64-slot tiles in the ring
constexpr int kProducers = 4;                  // producer warps (16-byte cp.async into the swizzle)
constexpr int kThreads = kWgs * kConsumerThreads + kProducers * 32;  // 384
constexpr int kCtasPerSm = 1;  // __launch_bounds__ and the co-residency check
// Registers per thread after the roles split (setmaxnreg): the producer warpgroup gives up what
// the consumers' 64 x 256 fp32 accumulators need. 128 x 56 + 256 x 224 = 64,512.
constexpr int kProducerRegs = 56;
constexpr int kConsumerRegs = 224;
static_assert(kProducers == 4, "the producers are one warpgroup (setmaxnreg works per warpgroup)");
// setmaxnreg moves registers inside the CTA's launch allocation: 168 per thread under
// __launch_bounds__(384, 1), not the SM's 65,536 (a raise past it waits forever).
static_assert(kProducers * 32 * kProducerRegs + kWgs * kConsumerThreads * kConsumerRegs <= kThreads * 168,
              "setmaxnreg redistributes the CTA's launch allocation");
using kernels::rows64::kBlockBytes;   // 4 KB: one 64-dim block of a stage
using kernels::rows64::kBlocks;       // 9 swizzled 64-dim blocks per row (8 ckv + 1 kpe)
using kernels::rows64::kDimsPerWg;    // 256: the N of each PV wgmma
using kernels::rows64::kPBytes;       // 8 KB: P of a 64-slot tile, bf16
using kernels::rows64::kQBlockBytes;  // 8 KB: one block of Q
using kernels::rows64::kQBytes;       // 72 KB
using kernels::rows64::kStageBytes;   // 36 KB
static_assert(kernels::rows64::kStageRows == kStageRows && kernels::rows64::kDimK == kDimK &&
                  kWgs * kConsumerThreads == kernels::rows64::kConsumerThreads,
              "h64 runs the shared 64-row wgmma consumer pair");
constexpr int kSlotWarps = kThreads / 32;                  // warp counts of the row compaction

static_assert(kStageRows * 2 == kTileRows, "a 64-slot tile is two interleaved stages");
static_assert(kThreads * kIdxPerThread >= kMaxTopk, "one CTA compacts a whole index row of the entry's limit");

// Shared memory: the 1024-byte-aligned operands first (Q, P, the ring), the small state after
// them; the plan is placed at the first 1024-byte boundary of the dynamic shared memory.
struct SmemPlan {
  uint8_t q[kQBytes];                     // Q: 9 blocks of 64 heads x 128 B (A of S = Q K^T)
  uint8_t p[kPBytes];                     // P of the tile, 64 heads x 64 slots (A of O = P V)
  uint8_t ring[kStages][kStageBytes];     // two tile slots of two stages, interleaved per block
  uint64_t full[kStages];                 // the stage's rows arrived (producer lanes' cp.async)
  uint64_t empty[kStages];                // both consumer warpgroups are done with the stage
  uint64_t q_full;                        // Q arrived
  uint64_t hand[kWgs];                    // the seesaw's hand-offs: warpgroup 0 -> 1, 1 -> 0
  int32_t warp_count[kSlotWarps];         // compaction scratch
  float red_max[kWgs][kCtaHeads];         // each warpgroup's tile maxima per head
  float red_sum[kWgs][kCtaHeads];         // each warpgroup's sums per head, at the end
};
constexpr size_t kSmemBytes = kernels::rows64::smem_bytes_for<SmemPlan>();  // the plan, aligned

// The register need ptxas reports (sm_90a, nvcc 13.0) before the roles split, for the validator
// without a GPU: 65536 / 384 threads.
constexpr int kDocumentedRegisters = 168;

// Workspace: v2_fused's (counters, partials), then each CTA's compacted slots (no room for them
// in shared memory next to Q and four stages): T x CTAs per token x topk int32.
struct Layout {
  WorkspaceLayout base;
  size_t slots = 0, bytes = 0;
};
inline Layout workspace_layout(int head_blocks, int max_splits, int num_tokens, int ctas_per_token, int topk) {
  Layout w;
  w.base = dsa_split::workspace_layout(head_blocks, max_splits);
  w.slots = w.base.bytes > 0 ? (w.base.bytes + 255) / 256 * 256 : dsa_workspace::kCounterBytes;
  w.bytes = w.slots + size_t(num_tokens) * ctas_per_token * topk * sizeof(int32_t);
  return w;
}

}  // namespace mlakit::dsa_h64
