// mla_decode v1_paged: constants, the kernel parameters, the shared-memory plan and the workspace
// layout. Host-safe (plain C++): the validator, --explain and the device code size everything
// from here.
//
// A work item ("vtoken") is 16 query heads of one query token of one request: the M of the
// shared 16-head consumer (kernels/common/consumer_h16.cuh). The grid is split into
// `groups` = s_q x heads / 16 groups of CTAs; group (i, hb) walks query position i, head block hb
// of every request, so the groups read the same cache rows at the same pace (one DRAM read, the
// others hit L2). Within a group, the requests' rows are one flat sequence of 64-row units (plus
// one unit of fixed cost per request) cut into equal contiguous ranges, one per CTA.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/common/host_device.h"
#include "kernels/common/kv_rows.h"
#include "kernels/common/tensor_map.h"
#include "kernels/common/workspace.h"
#include "mlakit/mla.h"

namespace mlakit::mla_v1 {

using kernels::kDimK;
using kernels::kDimR;
using kernels::kDimV;
using kernels::kKvPitch;
using kernels::kRowBytes;
using kernels::kStageElems;
using kernels::kStageRows;
using kernels::Pipe;

constexpr int kHeadBlock = 16;        // query heads of one work item: the M of every MMA
constexpr int kConsumerWarps = 4;     // one warpgroup: QK, softmax, PV
constexpr int kConsumerThreads = kConsumerWarps * 32;
template <int Producers>
constexpr int kThreadsFor = kConsumerThreads + Producers * 32;
constexpr int kCtasPerSm = 1;         // __launch_bounds__ and the co-residency check
constexpr int kUnitRows = 64;         // one schedule unit = one compute tile (two ring stages)
constexpr int kRequestCost = 1;       // units of fixed cost per work item (Q, epilogue)
constexpr int kMaxHeads = 128;
constexpr int kMaxSeqQ = 4;
constexpr int kMaxGroups = kMaxSeqQ * kMaxHeads / kHeadBlock;  // 32
// Split work items merge through per-CTA partial slots and per-CTA counters in the workspace's
// fixed counter region (two counters per CTA): at most this many CTAs.
constexpr int kMaxCtas = int(workspace::kCounterBytes / (2 * sizeof(uint32_t)));
static_assert(kUnitRows == 2 * kStageRows, "a schedule unit is one two-stage compute tile");
// The schedule's scratch in the ring before any copy (schedule.cuh, locate_range): each thread's
// first unit, the whole-items cut's boundaries (up to kMaxCtas + 1 units and as many items).
constexpr int kMaxScheduleThreads = 512;
constexpr size_t kEdgeScratchBytes =
    kMaxScheduleThreads * sizeof(int64_t) + (size_t(kMaxCtas) + 1) * (sizeof(int64_t) + sizeof(int));

// The schedule's aligned-pieces cut (schedule.cuh), its arithmetic host-safe so that the CPU tests
// model the cut with the kernel's own functions (tests/cpu/test_mla_cut.cpp).
// An item of `len` units in a group of `total` units cut over n <= total CTAs takes
// max(1, floor(len n / total)) pieces. In double: exact operands (len n < 2^53) and a correctly
// rounded quotient, so an integer quotient stays one, and no 64-bit integer division in the kernel
// (a 64-bit integer division is a long emulated sequence in every kernel that computes the cut).
MLAKIT_HOST_DEVICE inline uint32_t aligned_pieces_of(uint32_t len, int n, int64_t total) {
  const uint32_t k = uint32_t(double(len) * double(n) / double(total));
  return k > 1u ? k : 1u;
}
// The first unit of piece j of k (j <= k <= n) of an item of `len` units, from the item's start:
// floor(j len / k) in 32 bits, as j (len / k) + j (len % k) / k (j and len % k are below k).
MLAKIT_HOST_DEVICE inline int64_t aligned_piece_start(uint32_t len, uint32_t k, uint32_t j) {
  return int64_t(j) * (len / k) + j * (len % k) / k;
}
// The widest piece of an item cut into k: ceil(len / k) units.
MLAKIT_HOST_DEVICE inline uint32_t aligned_widest(uint32_t len, uint32_t k) { return (len + k - 1) / k; }

// The compiled (stages, producers) pairs; 5 stages would exceed the 227 KB of an SM next to the
// separate Q buffer.
constexpr Pipe kPipes[] = {{3, 1}, {4, 1}, {4, 2}, {4, 4}};
constexpr Pipe kDefaultPipe = {4, 2};
constexpr bool is_compiled(Pipe pipe) {
  for (const Pipe& c : kPipes)
    if (c.stages == pipe.stages && c.producers == pipe.producers) return true;
  return false;
}

// Kernel arguments; strides in elements (resolved by mla_run).
struct Params {
  MlaTensors io;
  int batch, seq_q, heads, causal;
  int page_size, num_pages;
  int64_t max_seqlen;    // max_pages * page_size: seqlens are clamped to it
  int groups;            // s_q * heads / 16 (gridDim.y)
  int ctas_per_group;    // gridDim.x
  int fused_rows;        // 1: kpe follows ckv in each row (one 1152-byte bulk copy per row)
  float scale_log2;      // sm_scale * log2(e)
  uint16_t* part_o;      // [ctas][2][rows][512] unnormalised partial outputs of split work items (bf16)
  float2* part_ml;       // [ctas][2][rows] (running max in the log2 domain, sum of 2^(x - m));
                         // rows = query rows of a group: 16, or 64 with the m64 tiling
  uint32_t* counters;    // [ctas][2] arrivals and departures; zero between calls
  int whole;             // units the longest range may grow by to keep items whole (tiling field w)
  int seesaw;            // m64: the seesaw consumer pair (tiling field o1), else the lockstep pair
  // m64 with gather 3: whole 32-row stages by tensor-map box copies (one per 64-dim block) when
  // `tma`; boxes of 64 dims x 32 rows of one page of ckv [pages][page_size][512] and kpe [..][64].
  int tma;
  kernels::TensorMapBytes ckv_map, kpe_map;
};

// Shared-memory plan; sizeof(SmemPlan<Stages>) is the dynamic shared memory of one CTA. The
// member names are those the shared consumer expects (q, s_part, p, red_max, red_sum).
constexpr int kSPitch = 64 + 8;  // as v2_fused: partial-S rows of 288 bytes
constexpr int kPPitch = 64 + 8;  // P rows of 144 bytes
template <int Stages>
struct SmemPlan {
  uint64_t full[Stages];   // the stage's rows arrived
  uint64_t empty[Stages];  // the consumers are done with the stage
  uint64_t q_full;         // Q of the next work item arrived
  uint64_t q_empty;        // the consumers hold Q in registers
  int64_t scan[32];        // per-warp sums of the schedule scan
  int64_t sched[4];        // first item, its first unit, last item, its first unit
  float red_max[kConsumerWarps][kHeadBlock];
  float red_sum[kConsumerWarps][kHeadBlock];
  alignas(16) uint16_t q[kHeadBlock * kKvPitch];          // Q, bf16 [16][576 + pad]
  alignas(16) float s_part[kConsumerWarps][kHeadBlock * kSPitch];
  alignas(16) uint16_t ring[Stages][kStageElems];         // gathered rows [stage][32][576 + pad]
  alignas(16) uint16_t p[kHeadBlock * kPPitch];           // P, bf16 [16][64 + pad]
  // P V reads this row in place of a tile's slots past its valid rows (the shared consumer's
  // Tile::zeros); written by the consumers before their first barrier.
  alignas(16) uint16_t zeros[kDimV];
};

constexpr size_t smem_bytes(int stages) {
  switch (stages) {
    case 3: return sizeof(SmemPlan<3>);
    case 4: return sizeof(SmemPlan<4>);
    default: return 0;
  }
}
static_assert(sizeof(SmemPlan<3>::ring) >= kEdgeScratchBytes, "the schedule's scratch fits in the ring");

// The register need as ptxas reports it (sm_90a, nvcc 13.0); the registry entry reads the
// compiled kernel's instead when a GPU is present.
constexpr int kDocumentedRegisters = 242;

// Workspace: the fixed counter region (zero between calls), then (m, l) and O partials, two
// slots of `group_rows` query rows per CTA (its first and its last work item may be split).
struct WorkspaceLayout {
  size_t counters = 0, part_ml = 0, part_o = 0, bytes = 0;
};
inline WorkspaceLayout workspace_layout(int ctas, int group_rows = kHeadBlock) {
  const auto align = [](size_t b) { return (b + 255) / 256 * 256; };
  const size_t rows = size_t(ctas) * 2 * group_rows;
  WorkspaceLayout w;
  w.counters = 0;
  w.part_ml = workspace::kCounterBytes;
  w.part_o = w.part_ml + align(rows * 2 * sizeof(float));
  w.bytes = w.part_o + rows * kDimV * sizeof(uint16_t);
  return w;
}

}  // namespace mlakit::mla_v1
