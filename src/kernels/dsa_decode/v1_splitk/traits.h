// v1_splitk: constants, the kernel parameters, the shared-memory plan and the facts validation needs
// (instantiated stage counts, CTAs per SM, registers). Host-safe (plain C++): the registry entry,
// the CLI's --explain and the device code all read the sizes from here, and the static_asserts tie
// the kernel's loop bounds and fragment shapes to the constants they come from.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/dsa_decode/common/workspace.h"
#include <utility>

#include "mlakit/dsa.h"

namespace mlakit::dsa_v1 {

constexpr int kHeads = 16;       // the M dimension of every MMA (m16n8k16)
constexpr int kDimV = 512;       // ckv: the latent, K and V at once
constexpr int kDimR = 64;        // kpe: the rope key
constexpr int kDimK = kDimV + kDimR;  // 576, the QK reduction length
constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kBlockN = 64;      // slots per tile: one n8 column tile of S per warp
// +8 bf16 (16 B) per smem row: row pitches of 1168 B and 144 B are 16 B mod 128 B, so the 8
// row addresses of one ldmatrix phase fall into 8 different 16-byte bank groups.
constexpr int kRowPad = 8;
constexpr int kKvPitch = kDimK + kRowPad;     // bf16 elements per gathered row in smem
constexpr int kPPitch = kBlockN + kRowPad;    // bf16 elements per row of the P tile
// Each thread compacts 8 index entries; a split covers at most 256 * 8 slots.
constexpr int kIdxPerThread = 8;
constexpr int kMaxSplitSlots = kThreads * kIdxPerThread;  // 2048

// The m16n8k16 MMA: fragment sizes the register arrays are declared with.
constexpr int kMmaN = 8;
constexpr int kMmaK = 16;
constexpr int kAccRegs = 4;    // fp32 accumulators per lane of one m16n8 tile
constexpr int kAFragRegs = 4;  // 32-bit registers per lane of one 16x16 bf16 A fragment
static_assert(kHeads == 16, "the 16 heads are the M of one m16n8k16 MMA");

// Row gathers: 16-byte cp.async chunks of 8 bf16; a warp moves 32 consecutive chunks (512 B).
constexpr int kChunkElems = 8;
constexpr int kWarpChunkElems = 32 * kChunkElems;  // 256: copy_row's second latent half starts here
static_assert(kDimV == 2 * kWarpChunkElems, "copy_row moves the latent as two warp-wide chunk runs");
static_assert(kDimR / kChunkElems <= 32, "copy_row moves the rope part with one chunk per lane");

// QK partition: warp w owns slot group w % 2 (32 slots = 4 n8 tiles) and k-quarter w / 2
// (144 dims = 9 k16 steps), keeping its Q fragments in registers; the four k-quarter partial
// sums meet in smem. +8 floats per row: a 288-byte pitch spreads the float2 stores of 8 rows
// over all banks (2 wavefronts, the minimum for 256 bytes).
constexpr int kQkGroups = 2;
constexpr int kQkQuarters = kWarps / kQkGroups;           // 4
constexpr int kQkSteps = kDimK / kMmaK / kQkQuarters;     // 9 k16 steps per warp
constexpr int kQkGroupSlots = kBlockN / kQkGroups;        // 32 slots per group
constexpr int kQkTilesN = kQkGroupSlots / kMmaN;          // 4: qk_partial's acc[kQkTilesN][kAccRegs]
constexpr int kSPitch = kBlockN + 8;                      // floats per row of a partial S
static_assert(kQkQuarters * kQkSteps * kMmaK == kDimK, "the k-quarters cover the 576 dims exactly");
static_assert(kQkSteps % 2 == 1, "qk_partial pairs k16 steps per ldmatrix.x4 and ends on an odd one");

// Softmax: warp w owns slots [8w, 8w + 8) of a tile, one n8 column tile (2 columns per quad lane).
constexpr int kSoftmaxSlots = kBlockN / kWarps;  // 8
static_assert(kSoftmaxSlots == kMmaN, "online_softmax reads one n8 tile of S per warp");

// PV: warp w owns dims [64w, 64w + 64) of O: 8 n8 tiles of fp32 accumulators.
constexpr int kPvDims = kDimV / kWarps;     // 64
constexpr int kPvTilesN = kPvDims / kMmaN;  // 8: o[kPvTilesN][kAccRegs]
static_assert(kPvTilesN % 2 == 0, "pv_mma loads B for two n8 tiles per ldmatrix.x4.trans");
static_assert(kBlockN % kMmaK == 0, "pv_mma walks the tile's slots in k16 steps");

// The stage counts the split kernel is instantiated for: the one list launch.cu dispatches over
// (so the kernel exists for exactly these), kernel_attributes reads, and validation accepts.
using InstantiatedStages = std::integer_sequence<int, 1, 2>;
template <int... S>
constexpr bool contains(std::integer_sequence<int, S...>, int value) {
  return ((value == S) || ...);
}
constexpr bool is_instantiated(int stages) { return contains(InstantiatedStages{}, stages); }
// The default tiling's ring: two stages overlap the next tile's gather with this tile's math.
constexpr int kDefaultStages = 2;
static_assert(is_instantiated(kDefaultStages), "the default tiling must be compiled");
// The shared-memory plan is sized up to this many stages so that validation (and the tuner's skip
// log) can say why a deeper ring does not fit: 3 stages need 243 KB.
constexpr int kMaxPlannedStages = 3;
// CTAs per SM each instantiation is built for (__launch_bounds__'s minimum): one stage leaves room
// for two CTAs, two stages for one. Validation checks shared memory and registers for as many.
constexpr int min_ctas_per_sm(int stages) { return stages == 1 ? 2 : 1; }
// Registers per thread ptxas gives each instantiation (sm_90a, CUDA 13.0, `-Xptxas -v`): the need
// validation assumes without a GPU; with one, it reads cudaFuncGetAttributes (launch.h).
constexpr int documented_registers(int stages) { return stages == 1 ? 125 : 140; }

// Shared-memory plan; sizeof(SmemPlan<Stages>) is the dynamic shared memory of one CTA.
template <int Stages>
struct SmemPlan {
  union {
    uint16_t q[kHeads * kKvPitch];              // Q tile, bf16 [16][576 + pad], until in registers
    float s_part[kQkQuarters][kHeads * kSPitch];  // QK partial sums per k-quarter, fp32
  };
  uint16_t kv[Stages][kBlockN * kKvPitch];      // gathered rows, bf16 [stage][64][576 + pad]
  uint16_t p[kHeads * kPPitch];                 // softmax numerators, bf16 [16][64 + pad]
  int32_t slots[kMaxSplitSlots];                // the split's valid slots, compacted
  float red_max[kWarps][kHeads];                // per-warp row maxima of one tile
  float red_sum[kWarps][kHeads];                // per-warp row sums at the end
  int32_t warp_count[kWarps];                   // valid indices per warp (compaction scan)
};

// sizeof(SmemPlan<stages>) for 1..kMaxPlannedStages; 0 for any other count.
template <int... S>
constexpr size_t smem_bytes_of(int stages, std::integer_sequence<int, S...>) {
  size_t bytes = 0;
  ((bytes = stages == S + 1 ? sizeof(SmemPlan<S + 1>) : bytes), ...);
  return bytes;
}
constexpr size_t smem_bytes(int stages) {
  return smem_bytes_of(stages, std::make_integer_sequence<int, kMaxPlannedStages>{});
}

// The merge kernel: each thread combines 8 dims (two float4) of one head, so a head takes 64
// threads; a CTA merges kHeads / merge_head_groups heads, at most 256 threads with 4 groups.
constexpr int kMergeDimsPerThread = 8;
static_assert(kMergeDimsPerThread == 8, "dsa_merge_kernel reads a thread's dims as two float4");
constexpr int kMergeThreadsPerHead = kDimV / kMergeDimsPerThread;  // 64
constexpr int kMergeMinHeadGroups = 4;
constexpr int kMergeMaxThreads = kHeads / kMergeMinHeadGroups * kMergeThreadsPerHead;  // 256
static_assert(kMergeMaxThreads <= 1024, "one merge CTA holds its heads' threads");
// Valid head groups: divide the heads and keep a CTA within kMergeMaxThreads (4, 8 or 16).
constexpr bool is_merge_head_groups(int groups) {
  return groups >= kMergeMinHeadGroups && groups <= kHeads && kHeads % groups == 0;
}

// Kernel arguments: the caller's tensors (strides resolved by dsa_run) and the plan's split.
struct Params {
  DsaTensors io;       // q_nope, q_pe, caches, sparse_indices, output [T, 16, 512], lse [T, 16]
  float* part_o;       // [T, splits, 16, 512] unnormalised partial outputs (splits > 1)
  float* part_m;       // [T, splits, 16] running max (log2 domain)
  float* part_l;       // [T, splits, 16] sum of 2^(x - m)
  int64_t num_slots;
  int num_tokens;
  int topk;
  int num_splits;
  int split_len;       // slots of topk per split (multiple of kBlockN, <= kMaxSplitSlots)
  float scale_log2;    // sm_scale * log2(e)
};

// Workspace: partial O, m, l for splits > 1 (nothing otherwise), after the op's counter region
// (common/workspace.h), which v1 leaves untouched so that a workspace can serve every kernel.
constexpr size_t kWorkspacePartials = dsa_workspace::kCounterBytes;  // byte offset of part_o
inline size_t workspace_bytes(int num_tokens, int num_splits) {
  if (num_splits <= 1) return 0;
  const size_t rows = size_t(num_tokens) * num_splits * kHeads;
  return kWorkspacePartials + rows * kDimV * sizeof(float) + 2 * rows * sizeof(float);
}

}  // namespace mlakit::dsa_v1
