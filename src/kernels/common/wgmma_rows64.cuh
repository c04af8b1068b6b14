// 64 query rows per CTA on Hopper's wgmma: the consumer pair shared by dsa_decode v2_fused's h64
// (64 heads of one token) and mla_decode v1_paged's m64 (64 of a request's (position, head) rows).
//
//   The gathered cache rows sit in wgmma's canonical 128-byte-swizzled layout: a 32-row stage is
//   9 blocks of 64 dims (8 ckv + 1 kpe), each 32 rows x 128 B, 16-byte chunk c of row r at
//   c ^ (r % 8). The same bytes are the K-major B of S = Q K^T (cache rows = N) and the MN-major
//   B of O = P V (dims = N). Q (64 rows x 576) is 9 such blocks of 64 rows; P (64 x 64) one.
//   Per 64-row tile (two stages), consumer warpgroup w of two:
//     S_w[64 x 32] = Q K_w^T        36 wgmma m64n32k16, A = Q, B = the warpgroup's own stage
//     the tile's row maxima meet in smem (both warpgroups then hold the same running max),
//     P_w = 2^(S_w - m) as bf16, kept in registers and written to smem for the other warpgroup,
//     O_w[64 x dims 256w..] += P_w V_w + P_(1-w) V_(1-w)
//                                   2 wgmma m64n256k16 with A = P_w from registers, 2 with A =
//                                   P_(1-w) from smem; B = the stages (MN-major)
//   Two meetings of the 256 consumer threads per tile (named barrier 3): after the maxima, after P.
// Lane L of warp v of a warpgroup holds rows 16 v + L / 4 and + 8 of the 64. Design and
// measurements: docs/kernels/dsa_decode_v2_fused.md and docs/kernels/mla_decode_v1_paged.md.
#pragma once

#include <cstdint>
#include <utility>

#include "kernels/common/async_pipe.cuh"
#include "kernels/common/gather.cuh"
#include "kernels/common/mma.cuh"
#include "kernels/common/rows64_layout.h"
#include "kernels/common/softmax.cuh"
#include "kernels/common/wgmma.cuh"

namespace mlakit::kernels::rows64 {

namespace gmma = cute::SM90::GMMA;

// Warp-uniform by construction (lane 0's value), so that what derives from it stays in uniform
// registers: wgmma takes its descriptors from there. Call it with the whole warp.
__device__ __forceinline__ int consumer_wg() { return __shfl_sync(0xffffffffu, int(threadIdx.x) / kWgThreads, 0); }
__device__ __forceinline__ int wg_warp() { return (threadIdx.x / 32) % 4; }
// The 256 consumer threads.
__device__ __forceinline__ void pair_sync() { named_barrier_sync(kPairBarrier, kConsumerThreads); }

// The kernel's shared-memory plan at the first swizzle atom of its dynamic shared memory
// (smem_bytes_for<Plan>() of it). Aligned by an offset from the shared array, not through an
// integer: the compiler then still knows the plan is shared memory and accesses it by LDS / STS,
// not generic loads and stores.
template <class Plan>
__device__ __forceinline__ Plan& plan_at(uint8_t* smem_raw) {
  return *reinterpret_cast<Plan*>(smem_raw + (kAlign - smem_addr(smem_raw) % kAlign) % kAlign);
}

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
using QkMma64 = gmma::MMA_64x64x16_F32BF16BF16_SS<gmma::Major::K, gmma::Major::K>;
using PvRegs = gmma::MMA_64x256x16_F32BF16BF16_RS<gmma::Major::K, gmma::Major::MN>;
using PvSmem = gmma::MMA_64x256x16_F32BF16BF16_SS<gmma::Major::K, gmma::Major::MN>;

template <size_t... I>
__device__ __forceinline__ void qk_mma(uint64_t a, uint64_t b, float (&d)[16], bool acc, std::index_sequence<I...>) {
  QkMma::fma(a, b, d[I]..., acc ? gmma::ScaleOut::One : gmma::ScaleOut::Zero);
}
template <size_t... I>
__device__ __forceinline__ void qk64_mma(uint64_t a, uint64_t b, float (&d)[32], bool acc, std::index_sequence<I...>) {
  QkMma64::fma(a, b, d[I]..., acc ? gmma::ScaleOut::One : gmma::ScaleOut::Zero);
}
template <size_t... I>
__device__ __forceinline__ void pv_regs(const uint32_t (&a)[4], uint64_t b, float (&d)[128], std::index_sequence<I...>) {
  PvRegs::fma(a[0], a[1], a[2], a[3], b, d[I]..., gmma::ScaleOut::One);
}
template <size_t... I>
__device__ __forceinline__ void pv_smem(uint64_t a, uint64_t b, float (&d)[128], std::index_sequence<I...>) {
  PvSmem::fma(a, b, d[I]..., gmma::ScaleOut::One);
}

// Offset of 16-byte chunk `chunk` (0..71) of row `row` in a run of swizzled 64-dim blocks of
// `block_bytes` each.
__device__ __forceinline__ uint32_t chunk_offset(int row, int chunk, int block_bytes) {
  return uint32_t((chunk / 8) * block_bytes + row * 128 + (((chunk % 8) ^ (row % 8)) * 16));
}

struct RowPtrs {
  const uint16_t* ckv;
  const uint16_t* kpe;
  bool valid;
};

// One warp: rows `row0`, `row0 + step`, ... (< rows_end) of a swizzled run of blocks, each from
// the ckv / kpe pointers `src(row)` gives; lane L moves chunks L and 32 + L of ckv, L < 8 chunk L
// of kpe. Rows the predicate rejects get zeros (nothing is read). `copy(dst, src, valid)` issues
// one 16-byte chunk.
template <class Src, class Copy>
__device__ __forceinline__ void copy_rows_by(uint8_t* dst, int block_bytes, int row0, int rows_end, int step, Src&& src,
                                             Copy&& copy) {
  const int lane = threadIdx.x % 32;
  for (int r = row0; r < rows_end; r += step) {
    const auto [ckv, kpe, valid] = src(r);
    copy(dst + chunk_offset(r, lane, block_bytes), ckv + lane * 8, valid);
    copy(dst + chunk_offset(r, 32 + lane, block_bytes), ckv + 256 + lane * 8, valid);
    if (lane < 8) copy(dst + chunk_offset(r, 64 + lane, block_bytes), kpe + lane * 8, valid);
  }
}
// ... by cp.async under the L2 cache policy `policy`.
template <class Src>
__device__ __forceinline__ void copy_rows(uint8_t* dst, int block_bytes, int row0, int rows_end, int step, Src&& src,
                                          uint64_t policy) {
  copy_rows_by(dst, block_bytes, row0, rows_end, step, src,
               [&](void* d, const void* g, bool valid) { cp_async_16_hint(d, g, valid, policy); });
}
// ... by cp.async with no cache hint.
template <class Src>
__device__ __forceinline__ void copy_rows(uint8_t* dst, int block_bytes, int row0, int rows_end, int step, Src&& src) {
  copy_rows_by(dst, block_bytes, row0, rows_end, step, src,
               [](void* d, const void* g, bool valid) { cp_async_16(d, g, valid); });
}

// Softmax state of the lane's two rows (16 warp + g and + 8 of the 64).
struct Rows {
  float m[2] = {-INFINITY, -INFINITY};  // running max (log2 domain), the same in both warpgroups
  float l[2] = {0.f, 0.f};              // this thread's share of sum 2^(x - m) over its warpgroup's slots
};

// One 64-row tile. `Smem` has q (Q) and p (P), both 1024-byte aligned, and red_max[kWgs][kRows]
// (each warpgroup's tile maxima). `own` and `other` are the shared addresses of this warpgroup's stage and the
// other's (a one-stage tile passes the same stage twice, with `lim` = 0 in warpgroup 1: P = 0 for
// the missing half adds exactly 0, and no wgmma diverges). Column c of this warpgroup's stage
// counts for the lane's row r when c < lim[r]. `after_qk` runs once S is in registers (the last
// read of Q in the tile).
template <class Smem, class AfterQk>
__device__ __forceinline__ void tile(Smem& sm, uint32_t own, uint32_t other, const int (&lim)[2],
                                     float scale_log2, Rows& st, float (&o)[128], AfterQk&& after_qk) {
  const int wg = consumer_wg(), lane = threadIdx.x % 32, q = lane % 4;
  const int row0 = wg_warp() * 16 + lane / 4;
  const uint32_t q_base = smem_addr(sm.q), p_base = smem_addr(sm.p);
  // S_w = Q K_w^T: 36 k16 steps into one accumulator (four chains measured no faster). The two
  // descriptors are built once; a step adds its byte offset / 16 to the start-address field (the
  // low 14 bits, which shared addresses below 256 KB never carry out of).
  float sacc[16];
  own = __shfl_sync(0xffffffffu, own, 0);  // warp-uniform: the descriptors stay in uniform registers
  other = __shfl_sync(0xffffffffu, other, 0);
  const uint64_t q_desc = k_major(q_base), k_desc = k_major(own);
  wgmma_fence();
#pragma unroll
  for (int step = 0; step < kDimK / 16; ++step) {
    const uint32_t k = (step % 4) * 32;
    qk_mma(q_desc + ((step / 4) * kQBlockBytes + k) / 16, k_desc + ((step / 4) * kBlockBytes + k) / 16, sacc,
           step > 0, std::make_index_sequence<16>{});
  }
  wgmma_commit();
  wgmma_wait<0>();
  pin(sacc);
  after_qk();

  // Online softmax: masked scores, the tile maxima of both warpgroups (smem), P.
  float x[16], mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int e = 0; e < 16; ++e) {
    const int col = 8 * (e / 4) + 2 * q + (e % 2), r = (e / 2) % 2;
    x[e] = col < lim[r] ? sacc[e] * scale_log2 : -INFINITY;
    mx[r] = fmaxf(mx[r], x[e]);
  }
  mx[0] = quad_max(mx[0]);
  mx[1] = quad_max(mx[1]);
  if (q == 0) {
    sm.red_max[wg][row0] = mx[0];
    sm.red_max[wg][row0 + 8] = mx[1];
  }
  pair_sync();
  float alpha[2], origin[2], sum[2] = {0.f, 0.f};
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float m_new = fmaxf(st.m[r], fmaxf(mx[r], sm.red_max[1 - wg][row0 + 8 * r]));
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
    *reinterpret_cast<uint32_t*>(sm.p + off) = pa[j / 2][2 * (j % 2)];
    *reinterpret_cast<uint32_t*>(sm.p + off + 8 * 128) = pa[j / 2][2 * (j % 2) + 1];
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
  const uint64_t v_own = v_desc(own + dims), v_other = v_desc(other + dims), p_desc = k_major(p_base + (1 - wg) * 64);
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < 2; ++kk) pv_regs(pa[kk], v_own + kk * 2048 / 16, o, std::make_index_sequence<128>{});
#pragma unroll
  for (int kk = 0; kk < 2; ++kk)
    pv_smem(p_desc + kk * 32 / 16, v_other + kk * 2048 / 16, o, std::make_index_sequence<128>{});
  wgmma_commit();
  wgmma_wait<0>();
  pin(o);
  pin(pa[0]);
  pin(pa[1]);
}

// ---- the seesaw: each warpgroup S of its own tile of a pair -----------------------------------
//
// The tiles of a pair sit in two slots of the ring, each a 64-row tile of two stages interleaved
// per block (kTileBlockBytes). Warpgroup 0 owns tile A (slot 0), warpgroup 1 tile B (slot 1); both
// keep their half of O's 512 dims as before. Per pair:
//   wg 0: S_A = Q K_A^T (36 wgmma m64n64k16) -> m_A = max(m, rows of S_A), P_A into registers and
//         smem, m_A into smem, hand-off A -> O_0 *= 2^(m - m_A); O_0 += P_A V_A (registers)
//         -> waits for hand-off B -> O_0 *= 2^(m_A - m_B); O_0 += P_B V_B (P_B from smem)
//   wg 1: waits for hand-off A -> O_1 *= 2^(m - m_A); O_1 += P_A V_A (P_A from smem), S_B = Q K_B^T
//         behind it -> m_B = max(m_A, rows of S_B), O_1 *= 2^(m_A - m_B), P_B into registers and
//         smem (P_A's reads are done), m_B into smem, hand-off B -> O_1 += P_B V_B (registers)
// so warpgroup 1's softmax runs under warpgroup 0's P_A V_A and the QK of a tile reads Q once (N =
// 64: 144 KB of shared-memory reads per tile against the lockstep pair's 216 KB). The running max
// passes 0 -> 1 -> 0 through one 64-float array per warpgroup (red_max) and one P buffer; the two
// hand-offs are mbarriers (hand[0]: 0 -> 1, hand[1]: 1 -> 0; 128 arrivals, release / acquire, one
// phase per pair), and each buffer's next write comes after the other warpgroup's read of it has
// completed (wgmma waited) and been handed back. A pair ends
// with the same m in both warpgroups and each warpgroup's O and l relative to it; l sums only the
// warpgroup's own tiles (total_sums adds the two).

// S[64 x 64] = Q K^T over one interleaved tile at shared address `tile`, issued and committed (not
// waited).
template <class Smem>
__device__ __forceinline__ void qk_tile64(const Smem& sm, uint32_t tile, float (&sacc)[32]) {
  const uint64_t q_desc = k_major(smem_addr(sm.q)), k_desc = k_major(tile);
  wgmma_fence();
#pragma unroll
  for (int step = 0; step < kDimK / 16; ++step) {
    const uint32_t k = (step % 4) * 32;
    qk64_mma(q_desc + ((step / 4) * kQBlockBytes + k) / 16, k_desc + ((step / 4) * kTileBlockBytes + k) / 16, sacc,
             step > 0, std::make_index_sequence<32>{});
  }
  wgmma_commit();
}

// Masked scores of a 64-column tile (column c counts for the lane's row r when c < lim[r]), the new
// running max from `m_in`, P = 2^(x - origin) as wgmma A fragments (k16 step kk: columns 16 kk ..
// 16 kk + 15) and this thread's share of its sum.
// S is overwritten by the masked, scaled scores.
__device__ __forceinline__ void softmax64(float (&x)[32], const int (&lim)[2], float scale_log2,
                                          const float (&m_in)[2], float (&m_new)[2], float (&origin)[2],
                                          float (&sum)[2], uint32_t (&pa)[4][4]) {
  const int q = threadIdx.x % 4;
  float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int e = 0; e < 32; ++e) {
    const int col = 8 * (e / 4) + 2 * q + (e % 2), r = (e / 2) % 2;
    x[e] = col < lim[r] ? x[e] * scale_log2 : -INFINITY;
    mx[r] = fmaxf(mx[r], x[e]);
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    m_new[r] = fmaxf(m_in[r], quad_max(mx[r]));
    origin[r] = softmax_origin(m_new[r]);
    sum[r] = 0.f;
  }
#pragma unroll
  for (int e = 0; e < 32; e += 2) {
    const int r = (e / 2) % 2;
    const float p0 = fast_exp2(x[e] - origin[r]), p1 = fast_exp2(x[e + 1] - origin[r]);
    sum[r] += p0 + p1;
    pa[e / 8][(e % 8) / 2] = pack_bf16x2(p0, p1);
  }
}

// P of a tile (64 rows x 64 columns, bf16) into the swizzled P buffer: rows row0 and row0 + 8.
__device__ __forceinline__ void store_p64(uint8_t* p, int row0, const uint32_t (&pa)[4][4]) {
  const int q = threadIdx.x % 4;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const uint32_t off = chunk_offset(row0, j, 0) + 4 * q;
    *reinterpret_cast<uint32_t*>(p + off) = pa[j / 2][2 * (j % 2)];
    *reinterpret_cast<uint32_t*>(p + off + 8 * 128) = pa[j / 2][2 * (j % 2) + 1];
  }
}

__device__ __forceinline__ void scale_rows(float (&o)[128], const float (&f)[2]) {
#pragma unroll
  for (int j = 0; j < 32; ++j) {
    o[4 * j] *= f[0], o[4 * j + 1] *= f[0];
    o[4 * j + 2] *= f[1], o[4 * j + 3] *= f[1];
  }
}

// The seesaw's ring: four 32-row stages in two tile slots, stage `buf` the half buf % 2 of slot
// buf / 2, interleaved per 64-dim block (block k of a slot: rows 0-31, then rows 32-63).
__device__ __forceinline__ uint8_t* seesaw_stage(uint8_t* ring, int buf) {
  return ring + (buf / 2) * kTileBytes + (buf % 2) * kBlockBytes;
}
// Whether ring stage `buf`, whose first row is `first`, belongs to a tile wholly past `end`
// (a tile B with no rows): nothing is copied into it and nothing reads it.
__device__ __forceinline__ bool seesaw_stage_empty(int first, int buf, int end) {
  return first - (buf % 2) * kStageRows >= end;
}

// The ring's side of a pair: tile slot `slot` is stages 2 slot and 2 slot + 1 (full and empty
// mbarriers of the kernel's ring). wait_slot waits for both stages' rows of the pair's phase (and
// orders cp.async's writes before wgmma's reads); release_slot lets the producers refill them.
__device__ __forceinline__ void wait_slot(uint64_t* full, int slot, uint32_t phase) {
  mbar_wait(&full[2 * slot], phase);
  mbar_wait(&full[2 * slot + 1], phase);
  fence_async_smem();
}
__device__ __forceinline__ void release_slot(uint64_t* empty, int slot) {
  mbar_arrive(&empty[2 * slot]);
  mbar_arrive(&empty[2 * slot + 1]);
}

// One pair of 64-row tiles in the ring's two slots (seesaw_stage), as described above. `lim`: the
// own tile's column limits. Each warpgroup waits for both slots' stages (it reads both) and
// releases a slot once its last read of it is done; after_qk() runs once the own QK is done (the
// pair's last read of Q). `phase`: the parity of this pair in the CTA (pairs so far, mod 2), for
// the ring's barriers and the hand-offs alike. `b_empty` (the same in both warpgroups): tile B
// holds no rows (a piece's odd last tile): its stages are waited for and released in order, but
// nothing reads them (they are not written). `Smem` has q, p, ring, full[4] and empty[4] (the
// ring's mbarriers), red_max[kWgs][kRows] and hand[2] (mbarriers of kWgThreads arrivals).
template <class Smem, class AfterQk>
__device__ __forceinline__ void pair_seesaw(Smem& sm, const int (&lim)[2], float scale_log2, Rows& st,
                                            float (&o)[128], uint32_t phase, bool b_empty, AfterQk&& after_qk) {
  const int wg = consumer_wg(), lane = threadIdx.x % 32;
  const int row0 = wg_warp() * 16 + lane / 4;
  // Warp-uniform (lane 0's): the descriptors stay in uniform registers.
  const uint32_t tile_a = __shfl_sync(0xffffffffu, smem_addr(seesaw_stage(&sm.ring[0][0], 0)), 0);
  const uint32_t tile_b = __shfl_sync(0xffffffffu, smem_addr(seesaw_stage(&sm.ring[0][0], 2)), 0);
  const auto wait = [&](int slot) { wait_slot(sm.full, slot, phase); };
  const auto release = [&](int slot) { release_slot(sm.empty, slot); };
  const auto publish_max = [&](float(&red)[kRows], const float(&m)[2]) {  // by the quad's first lane
    if (lane % 4 == 0) {
      red[row0] = m[0];
      red[row0 + 8] = m[1];
    }
  };
  const uint32_t dims = wg * 4 * kTileBlockBytes;  // O's dims [256 wg, 256 wg + 256): blocks 4 wg ..
  const uint64_t v_a = sw128(tile_a + dims, kTileBlockBytes, 1024), v_b = sw128(tile_b + dims, kTileBlockBytes, 1024);
  const uint64_t p_desc = k_major(smem_addr(sm.p));
  float sacc[32], m_new[2], origin[2], sum[2];
  uint32_t pa[4][4];
  if (wg == 0) {
    wait(0);
    qk_tile64(sm, tile_a, sacc);
    wgmma_wait<0>();
    pin(sacc);
    after_qk();
    softmax64(sacc, lim, scale_log2, st.m, m_new, origin, sum, pa);
    float alpha[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      alpha[r] = fast_exp2(st.m[r] - origin[r]);
      st.l[r] = st.l[r] * alpha[r] + sum[r];
    }
    store_p64(sm.p, row0, pa);
    publish_max(sm.red_max[0], m_new);
    fence_async_smem();  // warpgroup 1's wgmma reads P_A
    mbar_arrive(&sm.hand[0]);
    scale_rows(o, alpha);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) pv_regs(pa[kk], v_a + kk * 2048 / 16, o, std::make_index_sequence<128>{});
    wgmma_commit();
    wgmma_wait<0>();
    pin(o);
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) pin(pa[kk]);
    release(0);
    mbar_wait(&sm.hand[1], phase);  // P_B and m_B are in smem
    float beta[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float m_b = sm.red_max[1][row0 + 8 * r];
      beta[r] = fast_exp2(m_new[r] - softmax_origin(m_b));
      st.m[r] = m_b;
      st.l[r] *= beta[r];
    }
    scale_rows(o, beta);
    wait(1);
    if (!b_empty) {
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < 4; ++kk)
        pv_smem(p_desc + kk * 32 / 16, v_b + kk * 2048 / 16, o, std::make_index_sequence<128>{});
      wgmma_commit();
      wgmma_wait<0>();
      pin(o);
    }
    release(1);
  } else {
    mbar_wait(&sm.hand[0], phase);  // P_A and m_A are in smem
    float m_a[2], alpha[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      m_a[r] = sm.red_max[0][row0 + 8 * r];
      alpha[r] = fast_exp2(st.m[r] - softmax_origin(m_a[r]));
      st.l[r] *= alpha[r];
    }
    scale_rows(o, alpha);
    wait(0);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) pv_smem(p_desc + kk * 32 / 16, v_a + kk * 2048 / 16, o, std::make_index_sequence<128>{});
    wgmma_commit();
    wgmma_wait<0>();
    pin(o);
    release(0);  // before the QK below: the copies of the next tile A start a QK earlier
    wait(1);
    if (b_empty) {  // no scores: m_B = m_A, and O and l are already relative to it
      after_qk();
#pragma unroll
      for (int r = 0; r < 2; ++r) st.m[r] = m_a[r];
      publish_max(sm.red_max[1], m_a);
      mbar_arrive(&sm.hand[1]);
      release(1);
      return;
    }
    qk_tile64(sm, tile_b, sacc);
    wgmma_wait<0>();
    pin(sacc);
    after_qk();
    softmax64(sacc, lim, scale_log2, m_a, m_new, origin, sum, pa);
    float beta[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      beta[r] = fast_exp2(m_a[r] - origin[r]);
      st.l[r] = st.l[r] * beta[r] + sum[r];
      st.m[r] = m_new[r];
    }
    store_p64(sm.p, row0, pa);  // P_A's reads completed with the wait above
    publish_max(sm.red_max[1], m_new);
    fence_async_smem();  // warpgroup 0's wgmma reads P_B
    mbar_arrive(&sm.hand[1]);
    scale_rows(o, beta);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) pv_regs(pa[kk], v_b + kk * 2048 / 16, o, std::make_index_sequence<128>{});
    wgmma_commit();
    wgmma_wait<0>();
    pin(o);
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) pin(pa[kk]);
    release(1);
  }
}

// Each row's sum over both warpgroups (fixed order), the same in both; `Smem` has
// red_sum[kWgs][kRows].
template <class Smem>
__device__ __forceinline__ void total_sums(Smem& sm, const Rows& st, float (&l_total)[2]) {
  const int wg = consumer_wg(), lane = threadIdx.x % 32, row0 = wg_warp() * 16 + lane / 4;
  const float l0 = quad_sum(st.l[0]), l1 = quad_sum(st.l[1]);
  if (lane % 4 == 0) {
    sm.red_sum[wg][row0] = l0;
    sm.red_sum[wg][row0 + 8] = l1;
  }
  pair_sync();
#pragma unroll
  for (int r = 0; r < 2; ++r) l_total[r] = sm.red_sum[0][row0 + 8 * r] + sm.red_sum[1][row0 + 8 * r];
}

// This thread's share of the pair's unnormalised partial: its two rows (`warp_row0` + lane / 4 and
// + 8, where `warp_row0` is the partial row of its warp's first of 16 rows) of dims [256 wg,
// 256 wg + 256) into part_o [rows][512] as bf16 in whole 32-byte sectors, and their (m, l) into
// part_ml (by warpgroup 0).
__device__ __forceinline__ void store_partial(uint16_t* part_o, float2* part_ml, int64_t warp_row0, const Rows& st,
                                              const float (&l_total)[2], const float (&o)[128]) {
  const int wg = consumer_wg(), lane = threadIdx.x % 32, q = lane % 4;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int64_t row = warp_row0 + lane / 4 + 8 * r;
    uint16_t* dst = part_o + row * kDimV + wg * kDimsPerWg;
#pragma unroll
    for (int j = 0; j < 32; j += 2)
      store_bf16_tile_pair(dst + 8 * j, pack_bf16x2(o[4 * j + 2 * r], o[4 * j + 2 * r + 1]),
                           pack_bf16x2(o[4 * j + 4 + 2 * r], o[4 * j + 5 + 2 * r]));
    if (wg == 0 && q == 0) part_ml[row] = make_float2(st.m[r], l_total[r]);
  }
}

}  // namespace mlakit::kernels::rows64
