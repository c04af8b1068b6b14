// v1_splitk: constants, the kernel parameters and the shared-memory plan. Host-safe (plain C++):
// the validator, the CLI's --explain and the device code all size shared memory from here.
#pragma once

#include <cstddef>
#include <cstdint>

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
constexpr int kChunksPerRow = kDimK * 2 / 16;             // 72 16-byte cp.async chunks per slot
// QK partition: warp w owns slot group w % 2 (32 slots = 4 n8 tiles) and k-quarter w / 2
// (144 dims = 9 k16 steps), keeping its Q fragments in registers; the four k-quarter partial
// sums meet in smem. +8 floats per row: a 288-byte pitch spreads the float2 stores of 8 rows
// over all banks (2 wavefronts, the minimum for 256 bytes).
constexpr int kQkGroups = 2;
constexpr int kQkQuarters = kWarps / kQkGroups;           // 4
constexpr int kQkSteps = kDimK / 16 / kQkQuarters;        // 9 k16 steps per warp
constexpr int kSPitch = kBlockN + 8;                      // floats per row of a partial S

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

constexpr size_t smem_bytes(int stages) {
  switch (stages) {
    case 1: return sizeof(SmemPlan<1>);
    case 2: return sizeof(SmemPlan<2>);
    case 3: return sizeof(SmemPlan<3>);
    default: return 0;
  }
}

// Kernel arguments; pointers are device addresses, strides in elements.
struct Params {
  const void* q_nope;  // bf16
  const void* q_pe;
  const void* ckv;
  const void* kpe;
  const int32_t* indices;
  void* out;           // bf16 [T, 16, 512]
  float* lse;          // [T, 16]
  float* part_o;       // [T, splits, 16, 512] unnormalised partial outputs (splits > 1)
  float* part_m;       // [T, splits, 16] running max (log2 domain)
  float* part_l;       // [T, splits, 16] sum of 2^(x - m)
  int64_t q_nope_stride_t, q_nope_stride_h, q_pe_stride_t, q_pe_stride_h;
  int64_t ckv_stride, kpe_stride, indices_stride;
  int64_t num_slots;
  int num_tokens;
  int topk;
  int num_splits;
  int split_len;       // slots of topk per split (multiple of kBlockN, <= kMaxSplitSlots)
  float scale_log2;    // sm_scale * log2(e)
};

// Workspace: partial O, m, l for splits > 1 (nothing otherwise).
inline size_t workspace_bytes(int num_tokens, int num_splits) {
  if (num_splits <= 1) return 0;
  const size_t rows = size_t(num_tokens) * num_splits * kHeads;
  return rows * kDimV * sizeof(float) + 2 * rows * sizeof(float);
}

}  // namespace mlakit::dsa_v1
