// v2_fused, 64 heads per CTA (tiling field h64): the heads are the M of Hopper's wgmma.
//
//   grid and split as v2_fused (kernel.cuh): CTA (s x head_groups + g, t), head_groups = H / 64.
//   warps 0-7: two consumer warpgroups. Per 64-slot tile (ring stages 2i and 2i + 1), warpgroup w:
//     S_w[64 heads x 32 slots] = Q K_w^T     36 wgmma m64n32k16, A = Q, B = stage 2i + w (smem)
//     the tile's row maxima meet in smem (both warpgroups then hold the same running max),
//     P_w = 2^(S_w - m) as bf16, kept in registers and written to smem for the other warpgroup,
//     O_w[64 heads x dims 256w..] += P_w V_w + P_(1-w) V_(1-w)
//                                     2 wgmma m64n256k16 with A = P_w from registers, 2 with A =
//                                     P_(1-w) from smem; B = the stages (MN-major)
//   warps 8-11: producers (one warpgroup, its registers lowered by setmaxnreg for the consumers'
//   accumulators). Q once (64 heads x 576 into 9 swizzled blocks), then stage after stage
//   (stage i by warp i % 4) 32 rows by 16-byte cp.async into the swizzled blocks (lane L: chunks
//   L and 32 + L of ckv, L < 8: chunk L of kpe), completion counted on the stage's mbarrier.
//   Two named-barrier meetings of the 256 consumer threads per tile: after the maxima, after P.
//   The end as v2_fused, by the consumer threads: one split writes O / l and the lse, several
//   write partials per 16-head block and merge in the kernel (kernel.cuh).
// The compacted slots live in the workspace (p.slots): Q, P and four stages fill shared memory.
#pragma once

#include <cstdint>
#include <utility>

#include <cute/arch/mma_sm90_desc.hpp>
#include <cute/arch/mma_sm90_gmma.hpp>

#include "kernels/dsa_decode/v2_fused/h64_traits.h"
#include "kernels/dsa_decode/v2_fused/kernel.cuh"

namespace mlakit::dsa_v2::h64 {

using namespace mlakit::kernels;
namespace gmma = cute::SM90::GMMA;

// Descriptor of a 128-byte-swizzled operand at shared address `addr`. K-major (Q, P, K): `sbo`
// = 1024 to the next 8 rows, `lbo` unused. MN-major (V): `lbo` to the next 64 elements of N,
// `sbo` to the next 8 of K.
__device__ __forceinline__ uint64_t sw128(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  cute::GmmaDescriptor d;
  d.bitfield.start_address_ = uint16_t(addr >> 4);
  d.bitfield.leading_byte_offset_ = uint16_t(lbo >> 4);
  d.bitfield.stride_byte_offset_ = uint16_t(sbo >> 4);
  d.bitfield.base_offset_ = 0;
  d.bitfield.layout_type_ = 1;  // SWIZZLE_128B
  return d.desc_;
}
__device__ __forceinline__ uint64_t k_major(uint32_t addr) { return sw128(addr, 16, 1024); }
__device__ __forceinline__ uint64_t v_desc(uint32_t addr) { return sw128(addr, kBlockBytes, 1024); }

using QkMma = gmma::MMA_64x32x16_F32BF16BF16_SS<gmma::Major::K, gmma::Major::K>;
using PvRegs = gmma::MMA_64x256x16_F32BF16BF16_RS<gmma::Major::K, gmma::Major::MN>;
using PvSmem = gmma::MMA_64x256x16_F32BF16BF16_SS<gmma::Major::K, gmma::Major::MN>;

template <size_t... I>
__device__ __forceinline__ void qk_mma(uint64_t a, uint64_t b, float (&d)[16], bool acc, std::index_sequence<I...>) {
  QkMma::fma(a, b, d[I]..., acc ? gmma::ScaleOut::One : gmma::ScaleOut::Zero);
}
template <size_t... I>
__device__ __forceinline__ void pv_regs(const uint32_t (&a)[4], uint64_t b, float (&d)[128], std::index_sequence<I...>) {
  PvRegs::fma(a[0], a[1], a[2], a[3], b, d[I]..., gmma::ScaleOut::One);
}
template <size_t... I>
__device__ __forceinline__ void pv_smem(uint64_t a, uint64_t b, float (&d)[128], std::index_sequence<I...>) {
  PvSmem::fma(a, b, d[I]..., gmma::ScaleOut::One);
}

__device__ __forceinline__ void fence_async_smem() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
// The 256 consumer threads (named barrier 3; 1 and 2 are the per-warpgroup barriers of kernel.cuh).
__device__ __forceinline__ void pair_sync() { named_barrier_sync(3, kWgs * kConsumerThreads); }

// Offset of 16-byte chunk `chunk` (0..71) of row `row` in a run of swizzled 64-dim blocks of
// `block_bytes` each.
__device__ __forceinline__ uint32_t chunk_offset(int row, int chunk, int block_bytes) {
  return uint32_t((chunk / 8) * block_bytes + row * 128 + (((chunk % 8) ^ (row % 8)) * 16));
}

// One warp: rows `row0`, `row0 + step`, ... (< rows_end) of a swizzled run of blocks, each from
// ckv / kpe pointers given by `src(row)`; lane L moves chunks L and 32 + L of ckv, L < 8 chunk L
// of kpe. Rows the predicate rejects get zeros.
template <class Src>
__device__ __forceinline__ void copy_rows(uint8_t* dst, int block_bytes, int row0, int rows_end, int step, Src&& src,
                                          uint64_t policy) {
  const int lane = threadIdx.x % 32;
  for (int r = row0; r < rows_end; r += step) {
    const auto [ckv, kpe, valid] = src(r);
    cp_async_16_hint(dst + chunk_offset(r, lane, block_bytes), ckv + lane * 8, valid, policy);
    cp_async_16_hint(dst + chunk_offset(r, 32 + lane, block_bytes), ckv + 256 + lane * 8, valid, policy);
    if (lane < 8) cp_async_16_hint(dst + chunk_offset(r, 64 + lane, block_bytes), kpe + lane * 8, valid, policy);
  }
}

struct RowPtrs {
  const uint16_t* ckv;
  const uint16_t* kpe;
  bool valid;
};

// Producer warp `pw`: heads pw, pw + 4, ... of Q (issued only; the caller tracks completion).
__device__ inline void load_q(const Params& p, SmemPlan& s, int t, int head0, int pw) {
  const DsaTensors& x = p.io;
  const auto* q_nope = static_cast<const uint16_t*>(x.q_nope) + t * x.q_nope_stride_t + head0 * x.q_nope_stride_h;
  const auto* q_pe = static_cast<const uint16_t*>(x.q_pe) + t * x.q_pe_stride_t + head0 * x.q_pe_stride_h;
  copy_rows(s.q, kQBlockBytes, pw, kCtaHeads, kProducers,
            [&](int h) { return RowPtrs{q_nope + h * x.q_nope_stride_h, q_pe + h * x.q_pe_stride_h, true}; },
            l2_policy(L2Evict::kNormal));
}

// Producer warp `pw`: stages pw, pw + 4, ... of the CTA's `count` slots (slots[] in global memory,
// written by this CTA's compaction). Lane r reads the slot of row r of its next stage before
// waiting for the stage's buffer.
__device__ inline void produce(const Params& p, SmemPlan& s, const int32_t* slots, int count, int pw) {
  const DsaTensors& x = p.io;
  const auto* ckv = static_cast<const uint16_t*>(x.ckv_cache);
  const auto* kpe = static_cast<const uint16_t*>(x.kpe_cache);
  const uint64_t policy = l2_policy(L2Evict::kFirst);
  const int lane = threadIdx.x % 32;
  const int num_stages = (count + kStageRows - 1) / kStageRows;
  for (int i = pw; i < num_stages; i += kProducers) {
    const int b = i % kStages, rows = min(kStageRows, count - i * kStageRows);
    const int mine = lane < rows ? slots[i * kStageRows + lane] : 0;
    mbar_wait(&s.empty[b], ((i / kStages) & 1) ^ 1);
    copy_rows(s.ring[b], kBlockBytes, 0, kStageRows, 1,
              [&](int r) {
                const int64_t slot = __shfl_sync(0xffffffffu, mine, r);
                return RowPtrs{ckv + slot * x.ckv_stride_slot, kpe + slot * x.kpe_stride_slot, r < rows};
              },
              policy);
    cp_async_arrive_on(&s.full[b]);
  }
}

// Softmax state of the lane's two heads (rows 16 warp + g and + 8 of the CTA's 64).
struct Rows {
  float m[2] = {-INFINITY, -INFINITY};  // running max (log2 domain), the same in both warpgroups
  float l[2] = {0.f, 0.f};              // this thread's share of sum 2^(x - m) over its warpgroup's slots
};

// The consumer warpgroups' walk over the CTA's `count` slots; leaves O (this warpgroup's 256
// dims of the lane's two heads, wgmma accumulator layout) and the state.
__device__ inline void consume(SmemPlan& s, int count, float scale_log2, Rows& st, float (&o)[128]) {
  const int wg = consumer_wg(), lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
  const int row0 = wg_warp() * 16 + g;
  const uint32_t q_base = smem_addr(s.q), p_base = smem_addr(s.p);
  mbar_wait(&s.q_full, 0);
  fence_async_smem();  // cp.async wrote Q; wgmma reads it
  const int num_stages = (count + kStageRows - 1) / kStageRows;
  for (int i = 0; i < num_stages; i += kTileStages) {
    const bool two = i + 1 < num_stages;
    const int b0 = i % kStages, b1 = (i + 1) % kStages;
    mbar_wait(&s.full[b0], (i / kStages) & 1);
    if (two) mbar_wait(&s.full[b1], ((i + 1) / kStages) & 1);
    fence_async_smem();  // cp.async wrote the rows; wgmma reads them
    // A tile of one stage: warpgroup 1 has no slots of its own, warpgroup 0 no other half. Both
    // still run every wgmma (no divergent wgmma) on stage b0 with P = 0 for the missing half,
    // which adds exactly 0 (b0 holds finite rows).
    const uint32_t own = smem_addr(s.ring[wg == 0 || !two ? b0 : b1]);
    const uint32_t other = smem_addr(s.ring[wg == 1 || !two ? b0 : b1]);
    const int own_rows = wg == 0 || two ? min(kStageRows, count - (i + wg) * kStageRows) : 0;

    // S_w = Q K_w^T: 36 k16 steps into one accumulator (four chains measured no faster: step 10).
    float sacc[16];
    wgmma_fence();
#pragma unroll
    for (int step = 0; step < kDimK / 16; ++step) {
      const uint32_t k = (step % 4) * 32;
      qk_mma(k_major(q_base + (step / 4) * kQBlockBytes + k), k_major(own + (step / 4) * kBlockBytes + k), sacc,
             step > 0, std::make_index_sequence<16>{});
    }
    wgmma_commit();
    wgmma_wait<0>();
    pin(sacc);

    // Online softmax: masked scores, the tile maxima of both warpgroups (smem), P.
    float x[16], mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int e = 0; e < 16; ++e) {
      const int col = 8 * (e / 4) + 2 * q + (e % 2);
      x[e] = col < own_rows ? sacc[e] * scale_log2 : -INFINITY;
      mx[(e / 2) % 2] = fmaxf(mx[(e / 2) % 2], x[e]);
    }
    mx[0] = quad_max(mx[0]);
    mx[1] = quad_max(mx[1]);
    if (q == 0) {
      s.red_max[wg][row0] = mx[0];
      s.red_max[wg][row0 + 8] = mx[1];
    }
    pair_sync();
    float alpha[2], origin[2], sum[2] = {0.f, 0.f};
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float m_new = fmaxf(st.m[r], fmaxf(mx[r], s.red_max[1 - wg][row0 + 8 * r]));
      origin[r] = softmax_origin(m_new);
      alpha[r] = fast_exp2(st.m[r] - origin[r]);
      st.m[r] = m_new;
    }
    uint32_t pa[2][4];  // A fragments of P_w: k16 steps (slots 0-15, 16-31)
#pragma unroll
    for (int e = 0; e < 16; e += 2) {
      const int r = (e / 2) % 2;
      const float p0 = fast_exp2(x[e] - origin[r]), p1 = fast_exp2(x[e + 1] - origin[r]);
      sum[r] += p0 + p1;
      pa[e / 8][(e % 8) / 2] = pack_bf16x2(p0, p1);
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) st.l[r] = st.l[r] * alpha[r] + sum[r];
    // P_w into smem (zeros for a missing half): slots 32 wg + 8 j + 2q of rows row0, row0 + 8.
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const uint32_t off = chunk_offset(row0, 4 * wg + j, 0) + 4 * q;
      *reinterpret_cast<uint32_t*>(s.p + off) = pa[j / 2][2 * (j % 2)];
      *reinterpret_cast<uint32_t*>(s.p + off + 8 * 128) = pa[j / 2][2 * (j % 2) + 1];
    }
    fence_async_smem();  // the other warpgroup's wgmma reads it
#pragma unroll
    for (int j = 0; j < 32; ++j) {
      o[4 * j] *= alpha[0], o[4 * j + 1] *= alpha[0];
      o[4 * j + 2] *= alpha[1], o[4 * j + 3] *= alpha[1];
    }
    pair_sync();

    // O_w += P_w V_w + P_(1-w) V_(1-w), dims [256 wg, 256 wg + 256) = blocks 4 wg .. 4 wg + 3.
    const uint32_t dims = wg * 4 * kBlockBytes;
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < 2; ++kk) pv_regs(pa[kk], v_desc(own + dims + kk * 2048), o, std::make_index_sequence<128>{});
#pragma unroll
    for (int kk = 0; kk < 2; ++kk)
      pv_smem(k_major(p_base + (1 - wg) * 64 + kk * 32), v_desc(other + dims + kk * 2048), o,
              std::make_index_sequence<128>{});
    wgmma_commit();
    wgmma_wait<0>();
    pin(o);
    pin(pa[0]);
    pin(pa[1]);
    mbar_arrive(&s.empty[b0]);  // released only now: P V read both stages
    if (two) mbar_arrive(&s.empty[b1]);
  }
}

// Each head's sum over both warpgroups (fixed order), the same in both.
__device__ inline void total_sums(SmemPlan& s, const Rows& st, float (&l_total)[2]) {
  const int wg = consumer_wg(), lane = threadIdx.x % 32, row0 = wg_warp() * 16 + lane / 4;
  const float l0 = quad_sum(st.l[0]), l1 = quad_sum(st.l[1]);
  if (lane % 4 == 0) {
    s.red_sum[wg][row0] = l0;
    s.red_sum[wg][row0 + 8] = l1;
  }
  pair_sync();
#pragma unroll
  for (int r = 0; r < 2; ++r) l_total[r] = s.red_sum[0][row0 + 8 * r] + s.red_sum[1][row0 + 8 * r];
}

// One split: O / l as bf16 and the lse; several: the unnormalised partial of 16-head block hb =
// 4 block + warp (consumer threads).
__device__ inline void store(const Params& p, int block, int split, int splits, const Rows& st,
                             const float (&l_total)[2], const float (&o)[128]) {
  const int wg = consumer_wg(), lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
  const int hb = block * (kCtaHeads / kHeads) + wg_warp();
  const int col = wg * kDimsPerWg + 2 * q;
  if (splits == 1) {
    auto* out = static_cast<uint32_t*>(p.io.output);
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float inv = 1.f / l_total[r];
      const int64_t base = (int64_t(hb) * kHeads + g + 8 * r) * kDimV + col;
#pragma unroll
      for (int j = 0; j < 32; ++j) out[(base + 8 * j) / 2] = pack_bf16x2(o[4 * j + 2 * r] * inv, o[4 * j + 2 * r + 1] * inv);
      if (wg == 0 && q == 0) p.io.lse[hb * kHeads + g + 8 * r] = st.m[r] + log2f(l_total[r]);
    }
    return;
  }
  const int64_t row0 = (int64_t(hb) * p.max_splits + split) * kHeads;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float* dst = p.part_o + (row0 + g + 8 * r) * kDimV + col;
#pragma unroll
    for (int j = 0; j < 32; ++j) *reinterpret_cast<float2*>(dst + 8 * j) = make_float2(o[4 * j + 2 * r], o[4 * j + 2 * r + 1]);
    if (wg == 0 && q == 0) p.part_ml[row0 + g + 8 * r] = make_float2(st.m[r], l_total[r]);
  }
}

__global__ void __launch_bounds__(kThreads, 1) dsa_v2_h64_kernel(const __grid_constant__ Params p) {
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  auto& s = *reinterpret_cast<SmemPlan*>((reinterpret_cast<uintptr_t>(smem_raw) + kAlign - 1) / kAlign * kAlign);
  const int split = blockIdx.x / p.head_groups, group = blockIdx.x % p.head_groups, t = blockIdx.y;
  const int block = t * p.head_groups + group;  // 16-head blocks 4 block .. 4 block + 3
  constexpr int kBlocksPerCta = kCtaHeads / kHeads;
  const int warp = threadIdx.x / 32;
  const bool producer = warp >= kWgs * kConsumerWarps;
  const int pw = warp - kWgs * kConsumerWarps;
  if (threadIdx.x == 0) {
    for (auto& b : s.full) mbar_init(&b, 32);  // the filling warp's lanes
    for (auto& b : s.empty) mbar_init(&b, kWgs * kConsumerThreads);
    mbar_init(&s.q_full, kProducers * 32);
    mbar_fence_init();
  }
  if (producer) load_q(p, s, t, group * kCtaHeads, pw);

  int32_t* slots = p.slots + (int64_t(t) * gridDim.x + blockIdx.x) * p.topk;
  const RowSlice rs = slice_row<kThreads, kIdxPerThread>(p.io.sparse_indices + t * p.io.indices_stride_t, p.topk,
                                                         p.num_slots, split, p.max_splits, p.min_rows, slots,
                                                         s.warp_count);
  const bool works = split < rs.splits && rs.n_valid > 0;
  if (producer) {  // no copy may land in the smem of a finished CTA
    if (works) cp_async_arrive_on(&s.q_full);
    else cp_async_wait<0>();
  }
  if (!works) {
    if (split == 0)
      for (int w = 0; w < kBlocksPerCta; ++w) store_empty(p, block * kBlocksPerCta + w);
    return;
  }
  if (producer) {  // the producer warpgroup leaves once its copies are issued (consumers wait for them)
    set_max_registers<kProducerRegs, false>();
    produce(p, s, slots, rs.count, pw);
    return;
  }
  set_max_registers<kConsumerRegs, true>();
  {
    Rows st;
    float o[128] = {};
    float l_total[2];
    consume(s, rs.count, p.scale_log2, st, o);
    total_sums(s, st, l_total);
    store(p, block, split, rs.splits, st, l_total, o);
  }
  if (rs.splits == 1) return;
  uint32_t* counters = p.counters + 2 * block;
  wait_for_row(&counters[0], rs.splits, [] { pair_sync(); });
  for (int w = 0; w < kBlocksPerCta; ++w)
    merge_splits(p, block * kBlocksPerCta + w, split, rs.splits, kWgs * kConsumerThreads);
  leave_row(counters, rs.splits);
}

}  // namespace mlakit::dsa_v2::h64
