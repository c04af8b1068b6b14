// v2_fp8: v2_fused's design reading DeepSeek-V3.2's FP8 cache (mlakit/dsa_fp8.h). Constants, the
// kernel parameters, the shared-memory plan. Host-safe (plain C++).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/dsa_decode/v2_fused/traits.h"
#include "mlakit/dsa_fp8.h"

namespace mlakit::dsa_v2_fp8 {

using namespace mlakit::dsa_ring;
using dsa_v2::kConsumerThreads;
using dsa_v2::kConsumerWarps;
using dsa_v2::kHeads;
using dsa_v2::kMaxTopk;
using dsa_v2::kPPitch;
using dsa_v2::kSPitch;
using dsa_v2::kTileRows;
using dsa_v2::kTileStages;

// One raw ring stage: 32 rows of 656 bytes, each row one bulk copy.
constexpr int kRawRowBytes = dsa_fp8::kRowBytes;
constexpr int kRawStageBytes = kStageRows * kRawRowBytes;  // 20,992 B
constexpr int kCtasPerSm = 1;
// Warps 0-3 consume and dequantize; warps 4.. gather rows (the first of them also Q).
using dsa_v2::kThreadsFor;

// What the consumers do with a stage: the decode (dequantize into the bf16 tile, QK, softmax, PV),
// or nothing (the gather floor: the same rows into the same ring, released on arrival).
enum class Work { kDecode = 0, kStreamOnly = 1 };

// The compiled (stages, producers) pairs: the 20.5 KB stages leave room for 5 next to the bf16
// tile; stages are a multiple of the producer count.
constexpr Pipe kFp8Pipes[] = {{4, 1}, {4, 2}, {5, 1}, {4, 4}};
constexpr Pipe kFp8DefaultPipe = {4, 2};

// Kernel arguments: v2_fused's, plus the page size (a slot's row is at
// kv_cache + (slot / page_size) * kv_stride_page + (slot % page_size) * 656).
struct Params : dsa_v2::Params {
  int page_size;
};

// Shared-memory plan; sizeof(SmemPlan<Stages>) is the dynamic shared memory of one CTA.
template <int Stages>
struct SmemPlan {
  uint64_t full[Stages];   // the stage's raw rows arrived
  uint64_t empty[Stages];  // the consumers converted the stage (decode) or saw it (floor)
  uint64_t q_full;
  int32_t warp_count[32];
  float red_max[kConsumerWarps][kHeads];
  float red_sum[kConsumerWarps][kHeads];
  union alignas(16) {
    uint16_t q[kHeads * kKvPitch];                   // Q, bf16 [16][576 + pad]
    float s_part[kConsumerWarps][kHeads * kSPitch];  // QK partial sums per k-quarter
  };
  alignas(16) uint8_t ring[Stages][kRawStageBytes];     // raw 656-byte rows
  alignas(16) uint16_t tile[kTileStages][kStageElems];  // the dequantized tile, v2_fused's row layout
  alignas(16) uint16_t p[kHeads * kPPitch];
  int32_t slots[kMaxTopk];
};

constexpr size_t smem_bytes(int stages) {
  switch (stages) {
    case 4: return sizeof(SmemPlan<4>);
    case 5: return sizeof(SmemPlan<5>);
    default: return 0;
  }
}
constexpr bool is_fp8_pipe(Pipe pipe) {
  for (const Pipe& c : kFp8Pipes)
    if (c.stages == pipe.stages && c.producers == pipe.producers) return true;
  return false;
}
static_assert(smem_bytes(5) <= 227 * 1024, "five raw stages fit next to the bf16 tile");

// Register need of the decode as ptxas reports it (sm_90a, nvcc 13.0); the registry reads the
// compiled kernel's when a GPU is present.
constexpr int kDocumentedRegisters = 221;

}  // namespace mlakit::dsa_v2_fp8
