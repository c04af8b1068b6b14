// v2_fused: constants, the kernel parameters, the shared-memory plan and the workspace layout.
// Host-safe (plain C++): the validator, --explain and the device code size everything from here.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/dsa_decode/common/row_ring.h"
#include "kernels/dsa_decode/common/workspace.h"
#include "mlakit/dsa.h"

namespace mlakit::dsa_v2 {

using namespace mlakit::dsa_ring;

constexpr int kHeads = 16;            // the M of every m16n8k16 MMA
constexpr int kConsumerWarps = 4;     // one warpgroup: QK, softmax, PV
constexpr int kConsumerThreads = kConsumerWarps * 32;
// Warps 0-3 consume (0-7 with two consumer warpgroups); the warps after them gather rows (the
// first of them also Q).
template <int Producers, int Wgs = 1>
constexpr int kThreadsFor = kConsumerThreads * Wgs + Producers * 32;
// Heads per CTA: 16 per consumer warpgroup; a CTA of 32 heads (two warpgroups, DsaTiling::
// cta_heads) computes both head blocks from one gathered tile.
// The ring pipes compiled with two consumer warpgroups (hybrid gather, mma.sync only): 288 or 320
// threads, so the register cap is 224 or 204.
constexpr Pipe kWidePipes[] = {{4, 1}, {4, 2}};
constexpr int kCtasPerSm = 1;         // __launch_bounds__ and the co-residency check
// A compute tile is two ring stages: 64 slots.
constexpr int kTileStages = 2;
constexpr int kTileRows = kTileStages * kStageRows;
// Index compaction: each thread reads 16 consecutive entries of the row (160 threads or more).
constexpr int kIdxPerThread = 16;
constexpr int kMaxTopk = kThreadsFor<1> * kIdxPerThread;  // 2560
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
// Splits per row are capped so that the per-split partial outputs stay small next to the rows.
constexpr int kMaxSplits = 64;

static_assert(kDimK % (16 * kConsumerWarps) == 0, "the k-quarters must be whole k16 steps");
static_assert(kTileRows == 8 * kSlotTiles && kTileRows % 16 == 0, "a tile is whole n8 and k16 tiles");
static_assert(kDimV % (8 * kConsumerWarps) == 0, "each consumer warp owns whole n8 tiles of O");
static_assert(kMaxTopk % 4 == 0, "indices are loaded four at a time");

// Kernel arguments; strides in elements (already defaulted by dsa_run).
struct Params {
  DsaTensors io;
  int num_tokens;
  int topk;
  int64_t num_slots;
  int max_splits;        // CTAs per token and head group, of which split_row() uses what the row needs
  int head_groups;       // CTAs per (token, split), 16 x Wgs heads each: gridDim.x = max_splits x head_groups
  int min_rows;          // least slots per split (a multiple of kStageRows)
  float scale_log2;      // sm_scale * log2(e)
  // Partials are per block of 16 heads (T x H / 16 blocks), counters per CTA group (T x head_groups).
  float* part_o;         // [T x H / 16, max_splits, 16, 512] unnormalised partial outputs, bf16 in the
                         // first half of the region sized for fp32 (part_o_bf16)
  float2* part_ml;       // [T x H / 16, max_splits, 16] (running max in the log2 domain, sum of 2^(x - m))
  uint32_t* counters;    // [T x head_groups, 2] arrivals and departures of the group's CTAs; zero between calls
  int32_t* slots;        // h64 only: [T x gridDim.x, topk] each CTA's compacted slots
};

// How a tile's products are computed (the values are DsaTiling::mma): bf16 mma.sync m16n8k16 with
// the 16 heads of a warpgroup as M (h16, h32), or wgmma with the 64 heads of a CTA as M (h64).
enum class Mma { kSync = 0, kWgmma = 1 };

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

// Workspace (common/workspace.h): the op's counter region, then (m, l) and O partials of every
// block of 16 heads (T x head_groups of them); nothing when no row can split (one CTA per row and
// no pooling). The counters must be zero before the first call (the kernel leaves them zero).
// Pooled rows keep the same T x max_splits partials per block of a token, numbered by compact
// split (row_slice.cuh), so the layout is the same.
struct WorkspaceLayout {
  size_t counters = 0, part_ml = 0, part_o = 0, bytes = 0;
};
inline WorkspaceLayout workspace_layout(int head_blocks, int max_splits, bool pooled = false) {
  WorkspaceLayout w;
  if (max_splits <= 1 && !pooled) return w;
  const auto align = [](size_t b) { return (b + 255) / 256 * 256; };
  const size_t rows = size_t(head_blocks) * max_splits * kHeads;
  w.counters = 0;
  w.part_ml = dsa_workspace::kCounterBytes;
  w.part_o = w.part_ml + align(rows * 2 * sizeof(float));
  w.bytes = w.part_o + rows * kDimV * sizeof(float);
  return w;
}
static_assert(dsa_workspace::kCounterBytes % 256 == 0, "the partials stay 256-byte aligned");

}  // namespace mlakit::dsa_v2
