// v2_fp8: v2_fused's design reading DeepSeek-V3.2's FP8 cache (mlakit/dsa_fp8.h). Constants, the
// kernel parameters, the shared-memory plan. Host-safe (plain C++).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/common/consumer_h16.h"
#include "kernels/dsa_decode/common/row_ring.h"
#include "kernels/dsa_decode/common/split_params.h"
#include "mlakit/dsa_fp8.h"

namespace mlakit::dsa_v2_fp8 {

using namespace mlakit::dsa_ring;
using dsa_split::kMaxTopk;
using h16::kConsumerThreads;
using h16::kConsumerWarps;
using h16::kHeads;
using h16::kTileRows;
using h16::kTileStages;

// One raw ring stage: 32 rows of 656 bytes, each row one bulk copy.
constexpr int kRawRowBytes = dsa_fp8::kRowBytes;
constexpr int kRawStageBytes = kStageRows * kRawRowBytes;  // 20,992 B
constexpr int kCtasPerSm = 1;
// Warps 0-7 consume, two warpgroups taking every other tile of the same 16 heads; warps 8-11 (one
// warpgroup) gather rows, the first of them also Q. setmaxnreg moves registers from the producers
// to the consumers: 2 x 128 x 232 + 128 x 40 <= 65,536.
constexpr int kWgs = 2;
constexpr int kProducerWarps = 4;
constexpr int kConsumerRegs = 232, kProducerRegs = 40;
static_assert(kWgs * kConsumerThreads * kConsumerRegs + kProducerWarps * 32 * kProducerRegs <= 65536,
              "the register file holds both consumer warpgroups and the producers");
// Warps 0-7 consume (two warpgroups), the Producers warps after them gather rows.
template <int Producers, int Wgs = kWgs>
constexpr int kThreadsFor = kConsumerThreads * Wgs + Producers * 32;
// Named barrier of both consumer warpgroups (1 and 2 are each warpgroup's own).
constexpr uint32_t kPairBarrier = 3;

// What the consumers do with a stage: the decode (QK, softmax, PV on the raw bytes),
// or nothing (the gather floor: the same rows into the same ring, released on arrival).
enum class Work { kDecode = 0, kStreamOnly = 1 };

// The compiled (stages, producers) pairs: up to 8 raw stages of 20.5 KB fit beside both warpgroups'
// Q, S and P and the slots; the producers are one whole warpgroup (setmaxnreg acts on warpgroups).
constexpr Pipe kFp8Pipes[] = {{4, kProducerWarps}, {8, kProducerWarps}};
constexpr Pipe kFp8DefaultPipe = {8, kProducerWarps};

// Split rows merge through global memory (a workspace, a cooperative launch), or, with
// the tiling's c field, inside a thread-block cluster of a row's CTAs through distributed shared
// memory: at most the portable cluster size of CTAs.
constexpr int kMaxClusterSplits = 8;

// Kernel arguments: the split rows' (dsa_decode/common/split_params.h), plus the page size (a slot's row is at
// kv_cache + (slot / page_size) * kv_stride_page + (slot % page_size) * 656) and, for a page size
// that is a power of two (the engines' 64), its log2, else -1: a shift instead of a division on the
// producers' path to their first copies (a run-time division is a long uniform chain).
struct Params : dsa_split::Params {
  int page_size;
  int page_shift;
};
constexpr int page_shift_of(int page_size) {
  if (page_size <= 0 || (page_size & (page_size - 1)) != 0) return -1;
  int shift = 0;
  while ((1 << shift) < page_size) ++shift;
  return shift;
}
static_assert(page_shift_of(64) == 6 && page_shift_of(1) == 0 && page_shift_of(48) == -1, "page_shift_of");

// Shared-memory plan; sizeof(SmemPlan<Stages>) is the dynamic shared memory of one CTA.
template <int Stages>
struct SmemPlan {
  uint64_t full[Stages];   // the stage's raw rows arrived
  uint64_t empty[Stages];  // the consumers are done with the stage (decode) or saw it (floor)
  uint64_t q_full;
  int32_t warp_count[32];
  h16::WgPart wg[kWgs];  // each consumer warpgroup's reductions, Q / partial S and P
  alignas(16) uint8_t ring[Stages][kRawStageBytes];  // raw 656-byte rows
  int32_t slots[kMaxTopk];
};

constexpr size_t smem_bytes(int stages) {
  switch (stages) {
    case 4: return sizeof(SmemPlan<4>);
    case 8: return sizeof(SmemPlan<8>);
    default: return 0;
  }
}
constexpr bool is_fp8_pipe(Pipe pipe) {
  for (const Pipe& c : kFp8Pipes)
    if (c.stages == pipe.stages && c.producers == pipe.producers) return true;
  return false;
}
static_assert(smem_bytes(8) <= 227 * 1024, "eight raw stages fit beside the warpgroups' buffers and the slots");

// Register need of the decode as ptxas reports it (sm_90a, nvcc 13.0); the registry reads the
// compiled kernel's when a GPU is present.
constexpr int kDocumentedRegisters = 168;

}  // namespace mlakit::dsa_v2_fp8
