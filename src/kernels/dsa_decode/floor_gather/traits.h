// floor_gather: the gather floor of the single-launch DSA kernels. It moves exactly the rows a
// v2_fused launch moves (same row split, same ring, same producer) from HBM into shared memory
// and does no math: its span is the distance every DSA kernel is measured against. Host-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/dsa_decode/common/row_ring.h"
#include "mlakit/dsa.h"

namespace mlakit::dsa_floor {

using namespace mlakit::dsa_ring;

constexpr int kConsumerWarps = 4;  // wait for a stage and hand it back, as v2's consumers do
// Warps 0-3 consume, warps 4.. produce.
template <int Producers>
constexpr int kThreadsFor = (kConsumerWarps + Producers) * 32;
constexpr int kCtasPerSm = 1;
constexpr int kIdxPerThread = 16;
constexpr int kMaxTopk = kThreadsFor<1> * kIdxPerThread;  // 2560 (the fewest threads)

// The register-load floor (Gather::kLdg): 8 warps per CTA, kLdgRows rows (18 16-byte loads per
// lane) in flight per warp, no shared-memory ring.
constexpr int kLdgThreads = 256;
constexpr int kLdgRows = 8;
constexpr int kLdgIdxPerThread = 16;
constexpr int kLdgMaxTopk = kLdgThreads * kLdgIdxPerThread;  // 4096

struct Params {
  DsaTensors io;  // reads sparse_indices, ckv_cache, kpe_cache; writes nothing
  int num_tokens;
  int num_heads;
  int topk;
  int64_t num_slots;
  int max_splits;
  int min_rows;
};

template <int Stages>
struct SmemPlan {
  uint64_t full[Stages];
  uint64_t empty[Stages];
  int32_t warp_count[32];
  alignas(16) uint16_t ring[Stages][kStageElems];
  int32_t slots[kMaxTopk];
};


constexpr size_t smem_bytes(int stages) { return ring_smem_bytes<SmemPlan>(stages); }
static_assert(covers_every_pipe<SmemPlan>(), "every compiled ring depth has a size");

}  // namespace mlakit::dsa_floor
