// v2_fused consumers, tensor-core path: one warpgroup runs the transposed formulation with
// Hopper's asynchronous warpgroup MMA (wgmma, sm_90a), 16 heads as N:
//   S^T[64 slots x 16] = K[64 x 576] Q^T        36 wgmma m64n16k16, A = K from registers
//   O^T[512 x 16]     += V^T[512 x 64] P^T      8 m-blocks x 4 k16 steps, A = V^T from registers
// A fragments come from the linear ring rows by ldmatrix (.trans for V^T), so the bulk-copied
// row layout needs no swizzle; only the small B operands (Q^T once per CTA, P^T per tile) sit in
// the 128-byte-swizzled K-major layout wgmma reads from shared memory.
// Warp w owns slots 16w..16w+15 of S^T and dims 64b + 16w.. of each O^T m-block b; a lane holds
// two slots (g, g + 8) x four heads (2q, 2q + 1, 8 + 2q, 9 + 2q), g = lane / 4, q = lane % 4.
#pragma once

#include <cstdint>

#include "kernels/common/wgmma.cuh"
#include "kernels/dsa_decode/v2_fused/consumer_mma.cuh"

namespace mlakit::dsa_v2 {

// Byte offset of 16-byte chunk `chunk` of row `row` in a K-major, 128-byte-swizzled block whose
// rows are 128 bytes (64 bf16) and whose 8-row atoms follow each other (1024 bytes apart).
__device__ __forceinline__ uint32_t sw128_offset(int row, int chunk) {
  return uint32_t((row / 8) * 1024 + (row % 8) * 128 + ((chunk ^ (row % 8)) * 16));
}

// wgmma descriptor of such a block starting at `smem` (1024-byte aligned), advanced by
// `k_bytes` along K inside the 128-byte rows (32 bytes per k16 step).
__device__ __forceinline__ uint64_t sw128_desc(const void* smem, uint32_t k_bytes) {
  cute::GmmaDescriptor d;
  d.bitfield.start_address_ = uint16_t((smem_addr(smem) + k_bytes) >> 4);
  d.bitfield.leading_byte_offset_ = 1;        // unused by swizzled K-major layouts
  d.bitfield.stride_byte_offset_ = 1024 >> 4;  // next 8 rows (N)
  d.bitfield.base_offset_ = 0;
  d.bitfield.layout_type_ = 1;  // SWIZZLE_128B
  return d.desc_;
}

using Wgmma64x16 = cute::SM90::GMMA::MMA_64x16x16_F32BF16BF16_RS<cute::SM90::GMMA::Major::K, cute::SM90::GMMA::Major::K>;

__device__ __forceinline__ void wgmma_64x16(const uint32_t (&a)[4], uint64_t desc, float (&d)[8], bool accumulate) {
  Wgmma64x16::fma(a[0], a[1], a[2], a[3], desc, d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7],
                  accumulate ? cute::SM90::GMMA::ScaleOut::One : cute::SM90::GMMA::ScaleOut::Zero);
}

constexpr int kQtBlocks = kDimK / 64;  // Q^T in 9 swizzled blocks of 64 dims x 16 heads
constexpr int kBlockBytes = kHeads * 128;
constexpr int kQkBatch = 9;            // k16 steps per batch of A fragments (two batches in flight)
constexpr int kQkChains = 4;           // independent S^T accumulators (latency of the 36 steps / 4)
constexpr int kOBlocks = kDimV / 64;   // O^T m-blocks
static_assert(kDimK / 16 == 4 * kQkBatch, "QK runs in four batches");

// Softmax state of the lane's four heads (n8 block j, column c -> head 8j + 2q + c).
struct HeadState {
  float m[2][2] = {{-INFINITY, -INFINITY}, {-INFINITY, -INFINITY}};
  float l[2][2] = {};  // this lane's share of sum 2^(x - m)
};

// Q of the token into the swizzled Q^T blocks by one warp's 16-byte cp.async (1152 chunks).
__device__ __forceinline__ void load_query_swizzled(const uint16_t* q_nope, int64_t q_nope_stride_h,
                                                    const uint16_t* q_pe, int64_t q_pe_stride_h, uint8_t* qt) {
  const int lane = threadIdx.x % 32;
  const uint64_t policy = l2_policy(L2Evict::kNormal);
  constexpr int kChunks = kDimK / 8;
  for (int i = lane; i < kHeads * kChunks; i += 32) {
    const int h = i / kChunks, c = i % kChunks;
    const uint16_t* src = c < kDimV / 8 ? q_nope + h * q_nope_stride_h + c * 8 : q_pe + h * q_pe_stride_h + (c - kDimV / 8) * 8;
    cp_async_16_hint(qt + (c / 8) * kBlockBytes + sw128_offset(h, c % 8), src, true, policy);
  }
}

// S^T of one tile: four batches of 9 k16 steps, A fragments double-buffered in registers; step k
// accumulates into acc[k % 4], four independent chains that are summed at the end.
__device__ __forceinline__ void qk_wgmma(const uint8_t* qt, const Tile& tile, float (&s)[8]) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const uint16_t* a_row = tile.row(warp * 16 + lane % 16) + (lane / 16) * 8;
  uint32_t a[2][kQkBatch][4];
  float acc[kQkChains][8];
#pragma unroll
  for (int b = 0; b < 4; ++b) {
    auto& buf = a[b % 2];
#pragma unroll
    for (int k = 0; k < kQkBatch; ++k) ldmatrix_x4(a_row + (b * kQkBatch + k) * 16, buf[k]);
    wgmma_fence();
#pragma unroll
    for (int k = 0; k < kQkBatch; ++k) {
      const int step = b * kQkBatch + k;
      wgmma_64x16(buf[k], sw128_desc(qt + (step / 4) * kBlockBytes, (step % 4) * 32), acc[step % kQkChains],
                  step >= kQkChains);
    }
    wgmma_commit();
    if (b >= 1) {
      wgmma_wait<1>();  // the batch before this one is done: its buffer may be refilled
#pragma unroll
      for (int k = 0; k < kQkBatch; ++k) pin(a[(b + 1) % 2][k]);
    }
  }
  wgmma_wait<0>();
#pragma unroll
  for (int k = 0; k < kQkBatch; ++k) pin(a[1][k]);
#pragma unroll
  for (int c = 0; c < kQkChains; ++c) pin(acc[c]);
#pragma unroll
  for (int i = 0; i < 8; ++i) s[i] = (acc[0][i] + acc[1][i]) + (acc[2][i] + acc[3][i]);
}

// Online softmax over the tile's S^T: the column (head) maxima across the warpgroup, P^T as
// bf16 into the swizzled block, the rescale factor of each of the lane's four heads.
template <class Smem>
__device__ void softmax_wgmma(Smem& s_mem, const float (&s)[8], int rows, float scale_log2, HeadState& st,
                              float (&alpha)[2][2]) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, q = lane % 4;
  float x[2][2][2];  // [n8 block j][row r][column c]
#pragma unroll
  for (int j = 0; j < 2; ++j)
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int c = 0; c < 2; ++c)
        x[j][r][c] = warp * 16 + g + 8 * r < rows ? s[4 * j + 2 * r + c] * scale_log2 : -INFINITY;
  float mx[2][2];
#pragma unroll
  for (int j = 0; j < 2; ++j)
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      float m = fmaxf(x[j][0][c], x[j][1][c]);
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 4));
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 8));
      mx[j][c] = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 16));
      if (g == 0) s_mem.red_max[warp][8 * j + 2 * q + c] = mx[j][c];
    }
  consumer_sync();
  uint8_t* pt = s_mem.pt();
#pragma unroll
  for (int j = 0; j < 2; ++j)
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      const int h = 8 * j + 2 * q + c;
      float tile_max = -INFINITY;
#pragma unroll
      for (int w = 0; w < kConsumerWarps; ++w) tile_max = fmaxf(tile_max, s_mem.red_max[w][h]);
      const float m_new = fmaxf(st.m[j][c], tile_max);
      const float origin = softmax_origin(m_new);
      alpha[j][c] = fast_exp2(st.m[j][c] - origin);
      float sum = 0.f;
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const float pr = fast_exp2(x[j][r][c] - origin);
        sum += pr;
        const int slot = warp * 16 + g + 8 * r;
        *reinterpret_cast<__nv_bfloat16*>(pt + sw128_offset(h, slot / 8) + (slot % 8) * 2) = __float2bfloat16_rn(pr);
      }
      st.l[j][c] = st.l[j][c] * alpha[j][c] + sum;
      st.m[j][c] = m_new;
    }
  fence_async_smem();  // P^T is read by wgmma next
  consumer_sync();
}

// O^T = alpha * O^T + V^T P^T over the tile's k16 steps; A fragments per step double-buffered.
__device__ __forceinline__ void pv_wgmma(const uint8_t* pt, const Tile& tile, const float (&alpha)[2][2],
                                         float (&o)[kOBlocks][8]) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int b = 0; b < kOBlocks; ++b)
#pragma unroll
    for (int j = 0; j < 2; ++j)
#pragma unroll
      for (int r = 0; r < 2; ++r)
#pragma unroll
        for (int c = 0; c < 2; ++c) o[b][4 * j + 2 * r + c] *= alpha[j][c];
  const int k_steps = (tile.rows + 15) / 16;
  uint32_t a[2][kOBlocks][4];
#pragma unroll
  for (int k = 0; k < kTileRows / 16; ++k) {
    if (k >= k_steps) break;
    auto& buf = a[k % 2];
    const uint16_t* row = tile.v_row(k * 16 + (lane / 16) * 8 + lane % 8) + warp * 16 + ((lane / 8) % 2) * 8;
#pragma unroll
    for (int b = 0; b < kOBlocks; ++b) ldmatrix_x4_trans(row + b * 64, buf[b]);
    wgmma_fence();
#pragma unroll
    for (int b = 0; b < kOBlocks; ++b) wgmma_64x16(buf[b], sw128_desc(pt, k * 32), o[b], true);
    wgmma_commit();
    if (k >= 1) {
      wgmma_wait<1>();
#pragma unroll
      for (int b = 0; b < kOBlocks; ++b) pin(a[(k + 1) % 2][b]);
    }
  }
  wgmma_wait<0>();
#pragma unroll
  for (int b = 0; b < kOBlocks; ++b) {
    pin(a[0][b]);
    pin(a[1][b]);
    pin(o[b]);
  }
}

// The consumer warpgroup's loop (wgmma path). Leaves O^T in `o` and the lane's head state in `st`.
template <int Stages, class Smem, class Part>
__device__ void consume_rows_wgmma(Smem& s, Part& part, int count, float scale_log2, HeadState& st, float (&o)[kOBlocks][8]) {
  write_zero_row(part);  // ordered before every P V by the barrier below
  mbar_wait(&s.q_full, 0);
  fence_async_smem();  // cp.async wrote Q^T; wgmma reads it
  consumer_sync();
  for_each_tile<Stages>(s, part, count, [&](const Tile& tile) {
    float sacc[8];
    qk_wgmma(part.qt(), tile, sacc);
    float alpha[2][2];
    softmax_wgmma(part, sacc, tile.rows, scale_log2, st, alpha);
    pv_wgmma(part.pt(), tile, alpha, o);
    consumer_sync();  // every warp's wgmmas have read P^T before the next tile rewrites it
  });
}

// Per head: the running max and the sum over the warpgroup into s.head_m / s.head_l; ends with a
// consumer barrier.
template <class Part>
__device__ void reduce_heads(Part& s, const HeadState& st) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, q = lane % 4;
#pragma unroll
  for (int j = 0; j < 2; ++j)
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      float l = st.l[j][c];
      l += __shfl_xor_sync(0xffffffffu, l, 4);
      l += __shfl_xor_sync(0xffffffffu, l, 8);
      l += __shfl_xor_sync(0xffffffffu, l, 16);
      if (g == 0) s.red_sum[warp][8 * j + 2 * q + c] = l;
    }
  if (warp == 0 && g == 0)  // the running max of a head is the same in every lane holding it
#pragma unroll
    for (int j = 0; j < 2; ++j)
#pragma unroll
      for (int c = 0; c < 2; ++c) s.head_m[8 * j + 2 * q + c] = st.m[j][c];
  consumer_sync();
  if (threadIdx.x < kHeads) {
    float l = 0.f;
#pragma unroll
    for (int w = 0; w < kConsumerWarps; ++w) l += s.red_sum[w][threadIdx.x];
    s.head_l[threadIdx.x] = l;
  }
  consumer_sync();
}

// O^T from registers into smem as [16 heads][512 dims] fp32 (the ring is idle by then).
template <class Smem>
__device__ void stage_output(Smem& s, const float (&o)[kOBlocks][8]) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, q = lane % 4;
  float* out = reinterpret_cast<float*>(&s.ring[0][0]);
#pragma unroll
  for (int b = 0; b < kOBlocks; ++b)
#pragma unroll
    for (int j = 0; j < 2; ++j)
#pragma unroll
      for (int r = 0; r < 2; ++r)
#pragma unroll
        for (int c = 0; c < 2; ++c)
          out[(8 * j + 2 * q + c) * kDimV + b * 64 + warp * 16 + g + 8 * r] = o[b][4 * j + 2 * r + c];
  consumer_sync();
}

}  // namespace mlakit::dsa_v2
