// The 16-head consumer warpgroup shared by dsa_decode (v2_fused, v2_fp8) and mla_decode (the
// 16-row kernel): its constants, and the shared memory one warpgroup keeps for itself. Host-safe:
// the planners size shared memory from the same numbers. The device code: consumer_h16.cuh.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/common/kv_rows.h"

namespace mlakit::h16 {

using kernels::kDimK;
using kernels::kDimV;
using kernels::kKvPitch;
using kernels::kStageElems;
using kernels::kStageRows;

constexpr int kHeads = 16;            // the M of every m16n8k16 MMA
constexpr int kConsumerWarps = 4;     // one warpgroup: QK, softmax, PV
constexpr int kConsumerThreads = kConsumerWarps * 32;
// A compute tile is two ring stages: 64 slots.
constexpr int kTileStages = 2;
constexpr int kTileRows = kTileStages * kStageRows;
// QK: warp w owns k-quarter w (144 of the 576 dims = 9 k16 steps, Q fragments in registers) for
// all 64 slots of a tile; the four partial S tiles meet in smem (fixed summation order).
constexpr int kQkSteps = kDimK / 16 / kConsumerWarps;  // 9
constexpr int kSlotTiles = kTileRows / 8;               // 8 n8 tiles of S per warp
// +8 floats per partial-S row: a 288-byte pitch spreads 8 rows' float2 stores over all banks.
constexpr int kSPitch = kTileRows + 8;
// +8 bf16 per P row: 144-byte pitch, conflict-free ldmatrix.
constexpr int kPPitch = kTileRows + 8;
// PV: warp w owns output dims [128 w, 128 w + 128): 16 n8 tiles of O.
constexpr int kDimsPerWarp = kDimV / kConsumerWarps;  // 128
constexpr int kOTiles = kDimsPerWarp / 8;              // 16

static_assert(kDimK % (16 * kConsumerWarps) == 0, "the k-quarters must be whole k16 steps");
static_assert(kTileRows == 8 * kSlotTiles && kTileRows % 16 == 0, "a tile is whole n8 and k16 tiles");
static_assert(kDimV % (8 * kConsumerWarps) == 0, "each consumer warp owns whole n8 tiles of O");

// What each consumer warpgroup keeps for itself: its reductions, its Q (then partial S) and P.
struct WgPart {
  float red_max[kConsumerWarps][kHeads];  // per-warp row maxima of one tile
  float red_sum[kConsumerWarps][kHeads];  // per-warp row sums at the end
  union alignas(16) {
    uint16_t q[kHeads * kKvPitch];                   // Q, bf16 [16][576 + pad]
    float s_part[kConsumerWarps][kHeads * kSPitch];  // QK partial sums per k-quarter
  };
  alignas(16) uint16_t p[kHeads * kPPitch];          // P, bf16 [16][64 + pad]
  // A row of zeros (the latent part of a ring row, any of its dims): P V reads it in place of the
  // rows past a tile's valid slots (P = 0 times it is 0; a stale row could hold NaN bit patterns),
  // so the producers never zero a partial stage. Written by the warpgroup before its first barrier.
  alignas(16) uint16_t zeros[kDimV];
};

}  // namespace mlakit::h16
