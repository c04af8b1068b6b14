// v2_fused, 64 heads per CTA (tiling field h64): the CTA body of dsa_decode/common/h64_cta.cuh over
// the bf16 cache. Its producer warpgroup copies the rows by 16-byte cp.async straight into
// wgmma's 128-byte swizzle (a group of 8 lanes per row, a lane one 16-byte chunk of each 64-dim
// block), completion counted on the stage's mbarrier.
#pragma once

#include <cstdint>

#include "kernels/dsa_decode/common/h64_cta.cuh"
#include "kernels/dsa_decode/v2_fused/kernel.cuh"

namespace mlakit::dsa_v2::h64 {

using namespace mlakit::dsa_h64;
// The h64 CTA's own names over v2_fused's (its SmemPlan and the ring's kWarpsPerStage).
using dsa_h64::kBlocks;
using dsa_h64::kProducers;
using dsa_h64::kRowsPerLane;
using dsa_h64::kRowsPerWarp;
using dsa_h64::kStages;
using dsa_h64::kThreads;
using dsa_h64::kWarpSets;
using dsa_h64::kWarpsPerStage;
using dsa_h64::num_stages_of;
using dsa_h64::SmemPlan;

// Producer warp `pw` of kProducers: the warp pair pw / 2 fills every other stage (pair 0 the even
// ones), and within a stage warp pw % 2 copies the 16 rows from kRowsPerWarp * (pw % 2) (slots[]
// in global memory, written by this CTA's compaction). Lane group g = lane / 8 copies rows g,
// g + 4, g + 8, g + 12 of the warp's share, lane c = lane % 8 chunk c of each of a row's nine
// 64-dim blocks (8 lanes x 16 bytes = one block's 128-byte row), straight into the swizzle; a
// lane's slots are read before it waits for the stage's buffer. Rows past `count` are zeros; a
// tile B wholly past it is not written (its consumers skip it). A lane's rows cost one address
// computation each instead of a shuffle and a swizzle per row: the producers' issue, not DRAM,
// bounds this gather (docs/knowledge/copies.md). Two warps per stage, two stages filled at once,
// beat four warps on every stage.
__device__ inline void produce(const Params& p, SmemPlan& s, const int32_t* slots, int count, int pw) {
  const DsaTensors& x = p.io;
  const auto* ckv = static_cast<const uint16_t*>(x.ckv_cache);
  const auto* kpe = static_cast<const uint16_t*>(x.kpe_cache);
  const uint64_t policy = l2_policy(L2Evict::kFirst);
  const int lane = threadIdx.x % 32, c = lane % 8;
  const int row0 = pw % kWarpsPerStage * kRowsPerWarp + lane / 8;  // the lane's rows: row0, row0 + 4, ..
  const int num_stages = num_stages_of(count);
  for (int i = pw / kWarpsPerStage; i < num_stages; i += kWarpSets) {
    const Ring<kStages> pos{i};
    const int b = pos.buffer();
    int32_t slot[kRowsPerLane];
#pragma unroll
    for (int j = 0; j < kRowsPerLane; ++j) {
      const int at = i * kStageRows + row0 + 4 * j;
      slot[j] = at < count ? slots[at] : -1;
    }
    pos.wait_empty(s.empty);
    if (rows64::seesaw_stage_empty(i * kStageRows, b, count)) {  // an empty tile B
      mbar_arrive(&s.full[b]);
      continue;
    }
    uint8_t* stage = rows64::seesaw_stage(&s.ring[0][0], b);
    // One row at a time: the loop is not unrolled, so each row's nine copies leave as soon as its
    // address is known instead of all 36 of the stage's in one burst behind four address
    // computations; a burst fills the load-store queue and stalls the consumer warps beside it
    // (docs/knowledge/copies.md). The slots move down the array (registers; an index into it would
    // put it in local memory).
#pragma unroll 1
    for (int j = 0; j < kRowsPerLane; ++j) {
      const int32_t sl = slot[0];
#pragma unroll
      for (int u = 0; u + 1 < kRowsPerLane; ++u) slot[u] = slot[u + 1];
      const int r = row0 + 4 * j;
      const bool valid = sl >= 0;
      const int64_t at = valid ? sl : 0;  // a masked chunk still needs a valid address
      uint8_t* dst = stage + rows64::chunk_offset(r, c, 0);  // chunk c of block 0; block k lies k tile blocks on
      const uint16_t* src = ckv + at * x.ckv_stride_slot + c * 8;
#pragma unroll
      for (int k = 0; k < kBlocks - 1; ++k)
        cp_async_16_hint(dst + k * rows64::kTileBlockBytes, src + k * 64, valid, policy);
      cp_async_16_hint(dst + (kBlocks - 1) * rows64::kTileBlockBytes, kpe + at * x.kpe_stride_slot + c * 8, valid, policy);
    }
    cp_async_arrive_on(&s.full[b]);
  }
}

// Where a 64-head CTA's rows come from: the kernel parameters, the first tiles' prefetch, the
// producer warpgroup (kWarpsPerStage warps per stage, each lane arriving once on the stage's full
// barrier) and the registers of each role after the split. This kernel's own: the bf16 caches by
// cp.async (produce above); v2_fp8's h64 reads the FP8 cache (v2_fp8/h64.cuh).
struct Bf16Source {
  using Params = dsa_v2::Params;
  static constexpr int kProducerRegs = h64::kProducerRegs, kConsumerRegs = h64::kConsumerRegs;
  __device__ static RowLinesBf16 lines(const Params& p) { return RowLinesBf16(p.io); }
  __device__ static void produce(const Params& p, SmemPlan& s, const int32_t* slots, int count, int pw) {
    h64::produce(p, s, slots, count, pw);
  }
};

template <bool FewSplits = false>
__global__ void __launch_bounds__(kThreads, 1) dsa_v2_h64_kernel(const __grid_constant__ Params p) {
  run_cta<FewSplits, Bf16Source>(p);
}

}  // namespace mlakit::dsa_v2::h64
