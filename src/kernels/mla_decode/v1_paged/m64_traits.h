// mla_decode v1_paged with 64 query rows per CTA (tiling field m64): constants and the
// shared-memory plan. Host-safe (plain C++), like traits.h.
//
// A group is 64 consecutive rows of a request's s_q x heads query rows (position-major, as the
// output is laid out), so 128 heads are 2 groups instead of 8 and 16 heads x 4 positions one
// instead of 4: each group streams every cache row into its CTAs once, whatever the heads and
// positions it holds. The math is the 64-row wgmma consumer pair of
// kernels/common/wgmma_rows64.cuh (shared with dsa_decode v2_fused's h64); the rows arrive in the
// 128-byte swizzle wgmma reads, a whole stage by tensor-map boxes (gather 3; the copy engine
// swizzles) or by 16-byte cp.async (gather 2, and every stage cut short; a 1D bulk copy cannot
// swizzle).
// Design and measurements: docs/kernels/mla_decode_v1_paged.md.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/common/rows64_layout.h"
#include "kernels/mla_decode/v1_paged/traits.h"

namespace mlakit::mla_v1::m64 {

using kernels::rows64::kRows;                  // query rows of a group: the M of every wgmma
using kernels::rows64::kWgs;                   // consumer warpgroups
constexpr int kStages = 4;                     // 32-row stages: two 64-row tiles in the ring
constexpr int kProducers = 4;                  // one producer warpgroup (setmaxnreg works per warpgroup)
using kernels::rows64::kConsumerThreads;       // 256
constexpr int kThreads = kConsumerThreads + kProducers * 32;  // 384
// Registers per thread after the roles split (setmaxnreg). setmaxnreg moves registers inside the
// CTA's launch allocation (168 per thread under __launch_bounds__(384, 1): 64,512), not the
// 65,536 of the SM: a raise past it waits forever (128 x 64 + 256 x 224 hung every launch).
// 72 / 216 spill nothing (ptxas -v; 56 / 224 spilled 76 bytes of the producers' schedule state).
constexpr int kProducerRegs = 72;
constexpr int kConsumerRegs = 216;
constexpr int kLaunchRegs = 65536 / kThreads / 8 * 8;  // 168: what each thread holds at launch
static_assert(kProducers * 32 * kProducerRegs + kConsumerThreads * kConsumerRegs <= kThreads * kLaunchRegs,
              "setmaxnreg redistributes the CTA's launch allocation");
using kernels::rows64::kBlockBytes;    // 4 KB: one 64-dim block of a stage
using kernels::rows64::kPBytes;        // 8 KB: P of a 64-row tile
using kernels::rows64::kQBlockBytes;   // 8 KB: one block of Q
using kernels::rows64::kQBytes;        // 72 KB
using kernels::rows64::kStageBytes;    // 36 KB
static_assert(kernels::rows64::kStageRows == kStageRows && kernels::rows64::kDimK == kDimK,
              "m64 runs the shared 64-row wgmma consumer pair");
constexpr int kSmemWarps = kThreads / 32;

// Shared memory: the 1024-byte-aligned operands first (Q, P, the ring), the small state after
// them; the plan sits at the first 1024-byte boundary of the dynamic shared memory.
struct SmemPlan {
  uint8_t q[kQBytes];                  // Q of the current item: 9 blocks of 64 rows x 128 B
  uint8_t p[kPBytes];                  // P of the tile, 64 rows x 64 cache rows
  uint8_t ring[kStages][kStageBytes];  // the gathered stages: one after another (o0) or two tile
                                       // slots interleaved per block (o1, m64.cuh stage_at); the
                                       // schedule's scratch first
  uint64_t full[kStages];              // the stage's rows arrived (the filling warp's cp.async)
  uint64_t empty[kStages];             // both consumer warpgroups are done with the stage
  uint64_t q_full;                     // Q of the next item arrived
  uint64_t q_empty;                    // the consumers' last read of Q of the item is done
  uint64_t hand[kWgs];                 // the seesaw's hand-offs (o1): warpgroup 0 -> 1, 1 -> 0
  int64_t scan[32];                    // per-warp sums of the schedule scan
  int64_t sched[4];                    // first item, its first unit, last item, its first unit
  float red_max[kWgs][kRows];          // each warpgroup's tile maxima per row
  float red_sum[kWgs][kRows];          // each warpgroup's sums per row, at the end
};
constexpr size_t kSmemBytes = kernels::rows64::smem_bytes_for<SmemPlan>();  // the plan, aligned
static_assert(sizeof(SmemPlan::ring) >= kEdgeScratchBytes, "the schedule's scratch fits in the ring");

// The register need ptxas reports (sm_90a, nvcc 13.0) before the roles split, for the validator
// without a GPU: 65536 / 384 threads.
constexpr int kDocumentedRegisters = kLaunchRegs;

// Query-row groups of a problem: ceil(s_q x heads / 64).
constexpr int groups_of(int seq_q, int heads) { return (seq_q * heads + kRows - 1) / kRows; }

}  // namespace mlakit::mla_v1::m64
