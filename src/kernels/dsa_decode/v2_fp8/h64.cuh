// v2_fp8 with 64 heads per CTA (tiling field h64): v2_fused's h64 kernel (the heads as the M of
// Hopper's wgmma, two consumer warpgroups in the seesaw of kernels/common/wgmma_rows64.cuh) with
// a producer warpgroup that reads the FP8 cache and writes the bf16 tile the consumers read.
//
//   Each producer lane loads its share of a row's 656 bytes with 16-byte loads into registers,
//   multiplies the E4M3 values by their tile's scale (exact: a 3-bit mantissa times a power of two
//   is a bf16) and stores the bf16 chunks into the 128-byte swizzle of v2_fused's h64 stages; the
//   rope goes over as it is. The consumers, the store and the merge are v2_fused's h64, unchanged
//   (run_cta with Fp8Source). The tile in shared memory is the dequantized cache, so the
//   reference's rule for the FP8 cache (the bf16 contract on the dequantized rows) holds as for
//   bf16.
//   Why not bulk copies into a raw ring as the 16-head kernel: Q (72 KB), P (8 KB) and the four
//   bf16 stages (144 KB) leave 0.9 KB of shared memory, so the bytes in flight are the producers'
//   registers: a stage ahead, four rows of 84 bytes per lane (43 KB per SM with both warp pairs).
//   What bounds it: the loads and the conversion; without both it runs at bf16 h64's pace. The
//   loads' part is not their latency (a deeper ring, an earlier or relaxed hand-off, L2-resident
//   rows: no gain in lab/micro/fp8_ring_pace.cu) but what they do to the consumers' shared-memory
//   reads: loads that bypass L1 slow them most, so the loads allocate in L1; bulk copies into a
//   raw area would take most of it, if shared memory had the 42 KB. Bulk copies into the freed
//   stage itself need no room but are slower: the seesaw frees the ring near a pair's end, so
//   nothing would be in flight behind the math.
// Design and measurements: docs/kernels/dsa_decode_v2_fp8.md; the mechanisms: docs/knowledge/fp8.md.
#pragma once

#include <cstdint>

#include "kernels/dsa_decode/v2_fp8/kernel.cuh"
#include "kernels/dsa_decode/common/h64_cta.cuh"

namespace mlakit::dsa_v2_fp8::h64 {

using namespace mlakit::kernels;
using dsa_h64::kProducers;
using dsa_h64::kStages;
using dsa_h64::num_stages_of;
using dsa_h64::SmemPlan;

// The roles' registers after the split (setmaxnreg): the producers hold a stage's four rows per lane
// (84 registers of loads) and the next stage's slots beside the conversion; the consumers compile
// into 192 without spills (184 spills). 128 x 120 + 256 x 192 = 64,512, the launch allocation.
constexpr int kProducerRegs = 120, kConsumerRegs = 192;

// 16 bytes from global memory into registers, allocated in L1 (the line is never read again, but
// loads that bypass L1 slow the consumers' shared-memory reads more: docs/knowledge/fp8.md). No L2
// eviction hint: at 128 heads the second head group's CTAs read the same rows. (Diagnosis build
// math-alone: every load finds the one row they all read in L1, produce().)
__device__ __forceinline__ uint4 load_16(const void* src) {
  uint4 v;
  asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(src));
  return v;
}

// Two f16 of a word as floats (exact).
__device__ __forceinline__ float2 f16x2_to_float2(uint32_t w) {
  float2 f;
  asm("{\n\t.reg .b16 l, h;\n\tmov.b32 {l, h}, %2;\n\tcvt.f32.f16 %0, l;\n\tcvt.f32.f16 %1, h;\n\t}"
      : "=f"(f.x), "=f"(f.y)
      : "r"(w));
  return f;
}

// Four E4M3 bytes of a word times `scale` -> two bf16 pairs (bytes 0, 1 -> lo; 2, 3 -> hi), through
// fp32: exact for a power-of-two scale (the format's), any other scale rounds the product to bf16
// (lab/micro/e4m3_bf16.cu checks every code). The integer route (f16 bits shifted into bf16's
// exponent range, then one bf16x2 multiply by 2^(112 + e)) has fewer instructions but a slower
// kernel: its HMUL2.BF16_V2 costs more than two fp32 multiplies and a pack (docs/knowledge/fp8.md).
__device__ __forceinline__ void dequantize_word(uint32_t w, float scale, uint32_t& lo, uint32_t& hi) {
  uint32_t a, b;
  e4m3x4_to_f16x2(w, a, b);
  const float2 fa = f16x2_to_float2(a), fb = f16x2_to_float2(b);
  lo = pack_bf16x2(fa.x * scale, fa.y * scale);
  hi = pack_bf16x2(fb.x * scale, fb.y * scale);
}

// 4 bytes from global memory into a register, allocated in L1 as load_16.
__device__ __forceinline__ uint32_t load_4(const void* src) {
  uint32_t v;
  asm volatile("ld.global.nc.b32 %0, [%1];" : "=r"(v) : "l"(src));
  return v;
}

// One row's share of a producer lane (lane c = lane % 8 of its row's group of eight): latent run m
// (m = 0..3) is bytes 128 m + 16 c .. + 15 (dims of scale tile m), rope chunk c (bf16 dims
// 512 + 8 c .. + 7), and the row's scale c % 4: the group's lanes exchange the scales (store_share).
struct RowShare {
  uint4 latent[dsa_fp8::kNumScales];
  uint4 rope;
  uint32_t scale;
};
__device__ __forceinline__ void load_share(RowShare& x, const uint8_t* row, int c) {
#pragma unroll
  for (int m = 0; m < dsa_fp8::kNumScales; ++m) x.latent[m] = load_16(row + dsa_fp8::kTile * m + 16 * c);
  x.rope = load_16(row + dsa_fp8::kRopeOffset + 16 * c);
  x.scale = load_4(row + dsa_fp8::kScaleOffset + 4 * (c % dsa_fp8::kNumScales));
}
// Row r of a stage (0..31) from a lane's share into the swizzle (rows64::chunk_offset): latent run m
// is the 16 dims 128 m + 16 c: chunks 2 (c % 4) and 2 (c % 4) + 1 of 64-dim block 2 m + c / 4; the
// rope chunk c of block 8. An invalid row (past the CTA's slots) is zeros, converted from nothing
// (a one-tile CTA's second stage is all such rows). Called by the whole warp (the scales go round
// the row's lane group first; a group's eight lanes share their row and its validity).
__device__ __forceinline__ void store_share(uint8_t* stage, int r, int c, const RowShare& x, bool valid) {
  const int group = threadIdx.x % 32 & ~7;
  float scale[dsa_fp8::kNumScales];
#pragma unroll
  for (int m = 0; m < dsa_fp8::kNumScales; ++m)
    scale[m] = __uint_as_float(__shfl_sync(0xffffffffu, x.scale, group + m));
  const auto put = [&](int m, const uint4& lo, const uint4& hi) {
    uint8_t* dst = stage + (2 * m + c / 4) * rows64::kTileBlockBytes;
    *reinterpret_cast<uint4*>(dst + rows64::chunk_offset(r, 2 * (c % 4), 0)) = lo;
    *reinterpret_cast<uint4*>(dst + rows64::chunk_offset(r, 2 * (c % 4) + 1, 0)) = hi;
  };
  uint8_t* rope = stage + (rows64::kBlocks - 1) * rows64::kTileBlockBytes + rows64::chunk_offset(r, c, 0);
  if (valid) {
#pragma unroll
    for (int m = 0; m < dsa_fp8::kNumScales; ++m) {
      const uint32_t w[4] = {x.latent[m].x, x.latent[m].y, x.latent[m].z, x.latent[m].w};
      uint32_t d[8];
#pragma unroll
      for (int k = 0; k < 4; ++k) dequantize_word(w[k], scale[m], d[2 * k], d[2 * k + 1]);
      put(m, make_uint4(d[0], d[1], d[2], d[3]), make_uint4(d[4], d[5], d[6], d[7]));
    }
    *reinterpret_cast<uint4*>(rope) = x.rope;
  } else {
    const uint4 zero = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int m = 0; m < dsa_fp8::kNumScales; ++m) put(m, zero, zero);
    *reinterpret_cast<uint4*>(rope) = zero;
  }
}

// Producer warp `pw` of kProducers, v2_fused h64's split of the ring: warp pair pw / 2 fills every
// other stage, and within a stage lane group grp = 4 (pw % 2) + lane / 8 (of eight) the four rows
// 4 grp .. 4 grp + 3 (their slots one 16-byte load, a stage ahead of the rows). A lane holds its
// four rows of a stage in registers (84 bytes each): they are requested once the warp pair's
// previous stage is handed over, so they fly while the consumers still hold the stage's buffer. A
// stage ends with the proxy fence (wgmma reads what the stores wrote) and every lane's arrival on
// the full barrier, before the next stage's loads: the arrival releases, and a release waits for
// the loads in flight.
// Rows past `count` are zeros; a tile B wholly past it is not written (its consumers skip it).
constexpr int kWarpsPerStage = 2;
constexpr int kWarpSets = kProducers / kWarpsPerStage;
constexpr int kRowsPerLane = kStageRows / kWarpsPerStage / 4;  // 4
static_assert(kStages % kWarpSets == 0 && kRowsPerLane == 4, "a warp pair takes whole stages; four slots per load");
static_assert(kWarpsPerStage == dsa_h64::kWarpsPerStage, "run_cta's full barriers count 32 x kWarpsPerStage lanes");
__device__ inline void produce(const Params& p, SmemPlan& s, const int32_t* slots, int count, int pw) {
  const auto* cache = static_cast<const uint8_t*>(p.io.kv_cache);
  const int lane = threadIdx.x % 32, c = lane % 8;
  const int row0 = (pw % kWarpsPerStage * 4 + lane / 8) * kRowsPerLane;  // the lane's rows: row0 .. row0 + 3
  const int num_stages = num_stages_of(count);
  RowShare x[kRowsPerLane];
  // Whether row row0 + u of stage i is one of the CTA's slots (else it loads nothing and is stored
  // as zeros).
  const auto valid = [&](int u, int i) { return i * kStageRows + row0 + u < count; };
  // The lane's four slots of stage i: one 16-byte load where they are all valid and the CTA's slot
  // array is 16-byte aligned (a top-k that is a multiple of 4), else one by one (0 past `count`).
  const bool aligned = reinterpret_cast<uintptr_t>(slots) % 16 == 0;
  const auto load_slots = [&](int i) {
    const int at = i * kStageRows + row0;
    int4 sl = make_int4(0, 0, 0, 0);
    if (at >= count) return sl;
    if (aligned && at + kRowsPerLane <= count) return *reinterpret_cast<const int4*>(slots + at);
#pragma unroll
    for (int u = 0; u < kRowsPerLane; ++u)
      if (at + u < count) (&sl.x)[u] = slots[at + u];
    return sl;
  };
  // The lane's rows of stage i into x, from their slots `sl` (0 past `count`: a row's address is
  // formed whether or not it is loaded, outside the validity branch).
  const auto load_rows = [&](int i, const int4& sl) {
    const int32_t slot[4] = {sl.x, sl.y, sl.z, sl.w};
#pragma unroll
    for (int u = 0; u < kRowsPerLane; ++u) {
      const uint8_t* row = raw_row(cache, p.io.kv_stride_page, p.page_size, p.page_shift, slot[u]);
      if (valid(u, i)) load_share(x[u], row, c);
    }
  };
  // The slots are read a stage before their rows: their round trip to L2 queues behind the rows'
  // loads (waiting for them took a third of the producers' time, ncu).
  int i = pw / kWarpsPerStage;
  if (i < num_stages) load_rows(i, load_slots(i));
  int4 next = load_slots(i + kWarpSets);  // the slots of the warp pair's next stage
  for (; i < num_stages; i += kWarpSets) {
    const Ring<kStages> pos{i};
    const int b = pos.buffer();
    pos.wait_empty(s.empty);
    if (rows64::seesaw_stage_empty(i * kStageRows, b, count)) {  // an empty tile B: nothing to write
      mbar_arrive(&s.full[b]);
      continue;  // the last pair's: no later stage (its rows loaded nothing)
    }
    uint8_t* stage = rows64::seesaw_stage(&s.ring[0][0], b);
    // The rows' chunk offsets are recomputed in every stage (a few integer operations): hoisted
    // out of the loop, ptxas kept them in local memory beside the 84 registers of loads.
    int r = row0;
    asm volatile("" : "+r"(r));
#pragma unroll
    for (int u = 0; u < kRowsPerLane; ++u) store_share(stage, r + u, c, x[u], valid(u, i));
    fence_async_smem();  // the stores are read by wgmma (the async proxy)
    mbar_arrive(&s.full[b]);
    if (i + kWarpSets < num_stages) {
      load_rows(i + kWarpSets, next);
      next = load_slots(i + 2 * kWarpSets);
    }
  }
}

struct Fp8Source {
  using Params = dsa_v2_fp8::Params;
  static constexpr int kProducerRegs = dsa_v2_fp8::h64::kProducerRegs;
  static constexpr int kConsumerRegs = dsa_v2_fp8::h64::kConsumerRegs;
  __device__ static RowLinesFp8 lines(const Params& p) { return RowLinesFp8(p); }
  __device__ static void produce(const Params& p, SmemPlan& s, const int32_t* slots, int count, int pw) {
    dsa_v2_fp8::h64::produce(p, s, slots, count, pw);
  }
};

template <bool FewSplits = false>
__global__ void __launch_bounds__(dsa_h64::kThreads, 1) dsa_v2_fp8_h64_kernel(const __grid_constant__ Params p) {
  dsa_h64::run_cta<FewSplits, Fp8Source>(p);
}

}  // namespace mlakit::dsa_v2_fp8::h64
