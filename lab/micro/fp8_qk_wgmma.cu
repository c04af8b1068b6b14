// Micro-benchmark: QK and P V of one 64-slot tile of FP8 cache rows (656 bytes: 512 E4M3, four
// fp32 scales, 64 bf16 rope) against 64 query heads, on one or two warpgroups per SM, every SM at
// once. QK:
//   wgmma: the transposed formulation S^T[64 slots x 64 heads] = K Q^T with wgmma m64n64k16, K as
//          the register A operand widened from the raw rows (one 16-byte shared load per four k16
//          steps and row, one cvt per E4M3 pair, each 128-channel block multiplied by
//          2^(its scale's exponent - the slot's largest) so that f16 holds it; the rope as bf16 times
//          2^-largest), Q^T in 128-byte-swizzled shared memory (f16, each head shifted into
//          [2^14, 2^15); the rope block bf16), the slot's largest scale and the head's shift applied
//          to S^T at the end;
//   mma:   v2_fp8's own QK (qk_partial: m16n8k16, 16 heads as M, one warp per 128-channel block, the
//          partial S to shared memory), once per tile: four of these are 64 heads.
// The wgmma QK also at N = 32 (a warpgroup per 32 heads; timed, not checked: the N = 64 check covers
// its code).
// And v2_fp8's 16-head QK with its MMA chains reordered (qk_variant: two chains per n8 tile, the
// loads first, both) and its MMAs alone (no scales, rope or partial S store).
// P V: O^T[512 dims x 64 heads] = V^T P^T by wgmma (pv_wgmma_fp8: V^T widened into the register A
// operand, P^T f16 in shared memory, 256 dims per warpgroup) against v2_fp8's pv_mma (16 heads).
// Prints SM cycles per tile (median over the CTAs) of each, and checks the wgmma S^T and O^T against
// host references (fp64 on the dequantized values) before timing. The timed loops index their
// accumulators with constants only: a run-time index puts them in local memory.
//
//   cmake --build build --target mlakit_micro_fp8_qk_wgmma   (configured with -DMLAKIT_BUILD_LAB=ON)
//   build/lab/fp8_qk_wgmma
//
// Evidence for docs/kernels/dsa_decode_v2_fp8.md ("More heads": the wgmma route's first measurement).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

#include "kernels/common/wgmma.cuh"
#include "kernels/dsa_decode/v2_fp8/kernel.cuh"

#include "micro.h"

// A wgmma descriptor of a K-major, 128-byte-swizzled block of 128-byte rows whose 8-row atoms are
// 1024 bytes apart, starting at `smem` (1024-byte aligned), advanced by `k_bytes` along K (32 bytes
// per k16 step). (The kernels' 16-head wgmma consumer that held this is retired; the benchmark
// keeps its own copy.)
__device__ __forceinline__ uint64_t sw128_desc(const void* smem, uint32_t k_bytes) {
  cute::GmmaDescriptor d;
  d.bitfield.start_address_ = uint16_t((mlakit::kernels::smem_addr(smem) + k_bytes) >> 4);
  d.bitfield.leading_byte_offset_ = 1;        // unused by swizzled K-major layouts
  d.bitfield.stride_byte_offset_ = 1024 >> 4;  // next 8 rows (N)
  d.bitfield.base_offset_ = 0;
  d.bitfield.layout_type_ = 1;  // SWIZZLE_128B
  return d.desc_;
}

namespace {

using namespace mlakit::kernels;
namespace fp8 = mlakit::dsa_v2_fp8;

constexpr int kSlots = 64, kHeadsW = 64, kLatent = 512, kRope = 64, kRow = 656;
constexpr int kLatentSteps = kLatent / 16;                 // 32 k16 steps, four per 64-channel block
constexpr int kBlocks = kLatent / 64 + 1;                  // 8 f16 latent blocks + 1 bf16 rope block
constexpr int kQtBlockBytes = kHeadsW * 128;               // 64 heads x 64 channels x 2 bytes
constexpr int kTileBytes = kSlots * kRow;                  // 41,984
constexpr int kIters = 256;

// The latent channel that k position kappa (0..15) of k16 step k holds: lane t's word k % 4 of its
// 16-byte run k / 4 (channels 64 (k / 4) + 16 t .. + 15), bytes 0, 1 -> k = 2t, 2t + 1 and bytes
// 2, 3 -> k = 2t + 8, 2t + 9 (as v2_fp8's QK).
int latent_channel(int k, int kappa) {
  const int t = (kappa % 8) / 2, u = (kappa < 8 ? 0 : 2) + kappa % 2;
  return 64 * (k / 4) + 16 * t + 4 * (k % 4) + u;
}

float e4m3_value(uint8_t b) {
  const int s = b >> 7, e = (b >> 3) & 15, m = b & 7;
  const float v = e == 0 ? std::ldexp(float(m) / 8.f, -6) : std::ldexp(1.f + float(m) / 8.f, e - 7);
  return s ? -v : v;
}
uint8_t e4m3_of(float x) {  // round to the nearest E4M3 by search (host only; finite, |x| <= 448)
  uint8_t best = 0;
  float err = INFINITY;
  for (int b = 0; b < 256; ++b) {
    if ((b & 0x7f) == 0x7f) continue;  // NaN
    const float d = std::fabs(e4m3_value(uint8_t(b)) - x);
    if (d < err) err = d, best = uint8_t(b);
  }
  return best;
}
uint16_t f16_bits(float x) {
  __half h = __float2half_rn(x);
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}
uint16_t bf16_bits(float x) {  // x exactly representable here (bf16 inputs times powers of two)
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return uint16_t(u >> 16);
}
float bf16_value(uint16_t b) {
  const uint32_t u = uint32_t(b) << 16;
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

struct Args {
  long long* n32;          // [grid]: wgmma QK at N = 32, cycles per 32-head tile
  long long* qk_variants;  // [grid][5]: qk_variant<split, loads first, tail> cycles per 16-head tile
  const uint8_t* pt;     // [64 heads x 128 bytes] P^T (f16 [head][slot]), swizzled (the smem image)
  const uint16_t* p16;   // [16][kPPitch] bf16: P of heads 0..15 for the mma path
  float* o;              // [512 dims][64 heads] (wgmma P V check)
  long long* pv_cycles;  // [grid][2]: wgmma, mma
  const uint8_t* tile;   // [64][656]
  const uint8_t* qt;     // [9][64 heads x 128 bytes], swizzled (the smem image)
  const float* unshift;  // [64] 2^shift_h
  const uint16_t* q16;   // [16][kKvPitch] bf16: heads 0..15 for the mma path
  float* s;              // [64 slots][64 heads] (wgmma check)
  long long* cycles;     // [grid][2]: wgmma, mma
  float* sink;
};

using Wgmma64x64F16 = cute::SM90::GMMA::MMA_64x64x16_F32F16F16_RS<cute::SM90::GMMA::Major::K, cute::SM90::GMMA::Major::K>;
using Wgmma64x64Bf16 = cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_RS<cute::SM90::GMMA::Major::K, cute::SM90::GMMA::Major::K>;

using Wgmma64x32F16 = cute::SM90::GMMA::MMA_64x32x16_F32F16F16_RS<cute::SM90::GMMA::Major::K, cute::SM90::GMMA::Major::K>;
using Wgmma64x32Bf16 = cute::SM90::GMMA::MMA_64x32x16_F32BF16BF16_RS<cute::SM90::GMMA::Major::K, cute::SM90::GMMA::Major::K>;

template <class Op>
__device__ __forceinline__ void wgmma_64x32(const uint32_t (&a)[4], uint64_t desc, float (&d)[16]) {
  Op::fma(a[0], a[1], a[2], a[3], desc, d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], d[9], d[10], d[11],
          d[12], d[13], d[14], d[15], cute::SM90::GMMA::ScaleOut::One);
}

template <class Op>
__device__ __forceinline__ void wgmma_64x64(const uint32_t (&a)[4], uint64_t desc, float (&d)[32]) {
  Op::fma(a[0], a[1], a[2], a[3], desc, d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], d[9], d[10], d[11],
          d[12], d[13], d[14], d[15], d[16], d[17], d[18], d[19], d[20], d[21], d[22], d[23], d[24], d[25], d[26],
          d[27], d[28], d[29], d[30], d[31], cute::SM90::GMMA::ScaleOut::One);
}

// Pins every register of a double-buffered set of A fragments (wgmma.cuh's pin, per fragment).
__device__ __forceinline__ void pin_all(uint32_t (&r)[2][4][4]) {
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) pin(r[i][j]);
}

__device__ __forceinline__ int expo(float x) { return int((__float_as_uint(x) >> 23) & 0xff) - 127; }

// S^T of the tile into d (units: 2^-(largest_slot + shift_head)); `largest` the lane's rows' 2^e.
// N = 64 heads, or N = 32 (the first 32 rows of each Q^T block, from `qt`; one warpgroup per 32
// heads).
template <int N = 64>
__device__ __forceinline__ void qk_wgmma_fp8(const uint8_t* tile, const uint8_t* qt, float (&d)[N / 2], float (&largest)[2]) {
  const int lane = threadIdx.x % 32, w = (threadIdx.x / 32) % 4, g = lane / 4, t = lane % 4;
  const uint8_t* row[2] = {tile + (16 * w + g) * kRow, tile + (16 * w + g + 8) * kRow};
  // Per row: the exponent of each block's scale, the largest; the f16x2 factors 2^(e_b - e_max).
  uint32_t fold[2][4];
  uint32_t rope_fold[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float4 sc = *reinterpret_cast<const float4*>(row[r] + 512);
    const int e[4] = {expo(sc.x), expo(sc.y), expo(sc.z), expo(sc.w)};
    const int emax = max(max(e[0], e[1]), max(e[2], e[3]));
    largest[r] = __int_as_float((emax + 127) << 23);
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      const uint32_t h = uint32_t(max(e[b] - emax + 15, 0)) << 10;  // f16 2^(e_b - emax) (0 below 2^-15)
      fold[r][b] = h | h << 16;
    }
    const uint32_t rb = uint32_t(127 - emax) << 7;  // bf16 2^-emax
    rope_fold[r] = rb | rb << 16;
  }
#pragma unroll
  for (int i = 0; i < N / 2; ++i) d[i] = 0.f;
  uint32_t a[2][4][4];  // two batches of four k16 steps
#pragma unroll
  for (int h = 0; h < kLatentSteps / 4; ++h) {  // a 16-byte run per row feeds four steps
    auto& buf = a[h % 2];
    const uint4 x0 = *reinterpret_cast<const uint4*>(row[0] + 64 * h + 16 * t);
    const uint4 x1 = *reinterpret_cast<const uint4*>(row[1] + 64 * h + 16 * t);
    const uint32_t w0[4] = {x0.x, x0.y, x0.z, x0.w}, w1[4] = {x1.x, x1.y, x1.z, x1.w};
    const int blk = h / 2;  // 128-channel scale block
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      uint32_t lo0, hi0, lo1, hi1;
      fp8::e4m3x4_to_f16x2(w0[i], lo0, hi0);
      fp8::e4m3x4_to_f16x2(w1[i], lo1, hi1);
      asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(buf[i][0]) : "r"(lo0), "r"(fold[0][blk]));
      asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(buf[i][1]) : "r"(lo1), "r"(fold[1][blk]));
      asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(buf[i][2]) : "r"(hi0), "r"(fold[0][blk]));
      asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(buf[i][3]) : "r"(hi1), "r"(fold[1][blk]));
    }
    wgmma_fence();
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int k = 4 * h + i;
      if constexpr (N == 64)
        wgmma_64x64<Wgmma64x64F16>(buf[i], sw128_desc(qt + (k / 4) * kQtBlockBytes, (k % 4) * 32), d);
      else
        wgmma_64x32<Wgmma64x32F16>(buf[i], sw128_desc(qt + (k / 4) * kQtBlockBytes, (k % 4) * 32), d);
    }
    wgmma_commit();
    if (h >= 1) {
      wgmma_wait<1>();
#pragma unroll
      for (int i = 0; i < 4; ++i) pin(a[(h + 1) % 2][i]);
    }
  }
  // The rope: bf16 rows times 2^-largest, natural channel order, ldmatrix from the raw rows.
  uint32_t ra[4][4];
  const uint8_t* rrow = tile + (16 * w + lane % 16) * kRow + 528 + (lane / 16) * 16;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    ldmatrix_x4(rrow + 32 * k, ra[k]);
    ra[k][0] = mul_bf16x2(ra[k][0], rope_fold[0]);
    ra[k][1] = mul_bf16x2(ra[k][1], rope_fold[1]);
    ra[k][2] = mul_bf16x2(ra[k][2], rope_fold[0]);
    ra[k][3] = mul_bf16x2(ra[k][3], rope_fold[1]);
  }
  wgmma_fence();
#pragma unroll
  for (int k = 0; k < 4; ++k)
    if constexpr (N == 64)
      wgmma_64x64<Wgmma64x64Bf16>(ra[k], sw128_desc(qt + 8 * kQtBlockBytes, k * 32), d);
    else
      wgmma_64x32<Wgmma64x32Bf16>(ra[k], sw128_desc(qt + 8 * kQtBlockBytes, k * 32), d);
  wgmma_commit();
  wgmma_wait<0>();
  pin_all(a);
#pragma unroll
  for (int k = 0; k < 4; ++k) pin(ra[k]);
  pin(d);
}

// O^T[256 dims of this warpgroup x 64 heads] += V^T P^T over the tile's 64 slots (4 k16 steps x 4
// m-blocks of 64 dims): A = V^T widened from 8-byte runs of the raw rows (lane g of warp w reads dims
// 8 c .. 8 c + 7, c = 8 w + g, of its slots 2t, 2t + 1, 2t + 8, 2t + 9; m-block j's rows g and g + 8
// are dims 8 c + 2 j and 8 c + 2 j + 1), one prmt per byte pair of two slots and one cvt per pair, each
// times 2^(the block's scale exponent - the slot's largest) as QK does; B = P^T, f16, one swizzled
// block [64 heads][64 slots]. `dim0`: the warpgroup's first dim (0 or 256).
__device__ __forceinline__ void pv_wgmma_fp8(const uint8_t* tile, const uint8_t* pt, int dim0, float (&o)[4][32]) {
  const int lane = threadIdx.x % 32, w = (threadIdx.x / 32) % 4, g = lane / 4, t = lane % 4;
  const int c = 8 * w + g, blk = (dim0 + 8 * c) / 128;
  // The f16x2 factors 2^(e_blk - e_max) of the lane's slots 16 k + 2t, + 1 (f01) and + 8, + 9 (f89),
  // read before the k16 steps (a kernel would take the slots' largest exponents from QK).
  uint32_t f01[4], f89[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    uint32_t fold[4];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const float4 sc = *reinterpret_cast<const float4*>(tile + (16 * k + 2 * t + (r % 2) + 8 * (r / 2)) * kRow + 512);
      const int e[4] = {expo(sc.x), expo(sc.y), expo(sc.z), expo(sc.w)};
      const int emax = max(max(e[0], e[1]), max(e[2], e[3]));
      fold[r] = uint32_t(max((blk == 0 ? e[0] : blk == 1 ? e[1] : blk == 2 ? e[2] : e[3]) - emax + 15, 0)) << 10;
    }
    f01[k] = fold[0] | fold[1] << 16;
    f89[k] = fold[2] | fold[3] << 16;
  }
  uint32_t a[2][4][4];  // two k16 steps in flight, four m-blocks each
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    auto& buf = a[k % 2];
    uint2 x[4];
#pragma unroll
    for (int r = 0; r < 4; ++r)
      x[r] = *reinterpret_cast<const uint2*>(tile + (16 * k + 2 * t + (r % 2) + 8 * (r / 2)) * kRow + dim0 + 8 * c);
#pragma unroll
    for (int half = 0; half < 2; ++half)  // slots 2t, 2t + 1 (A regs 0, 1) or 2t + 8, 2t + 9 (2, 3)
#pragma unroll
      for (int word = 0; word < 2; ++word) {  // bytes 4 word .. + 3: m-blocks 2 word, 2 word + 1
        const uint32_t xa = word ? x[2 * half].y : x[2 * half].x, xb = word ? x[2 * half + 1].y : x[2 * half + 1].x;
        uint32_t b[4];
        fp8::e4m3_slot_pairs(xa, xb, b);  // dims 0..3 of the word, each {slot a, slot b}
#pragma unroll
        for (int d = 0; d < 4; ++d) {  // byte d: m-block 2 word + d / 2, row g (d even) or g + 8
          uint32_t v;
          asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(v) : "r"(b[d]), "r"(half ? f89[k] : f01[k]));
          buf[2 * word + d / 2][2 * half + d % 2] = v;
        }
      }
    wgmma_fence();
#pragma unroll
    for (int j = 0; j < 4; ++j) wgmma_64x64<Wgmma64x64F16>(buf[j], sw128_desc(pt, k * 32), o[j]);
    wgmma_commit();
    if (k >= 1) {
      wgmma_wait<1>();
#pragma unroll
      for (int j = 0; j < 4; ++j) pin(a[(k + 1) % 2][j]);
    }
  }
  wgmma_wait<0>();
  pin_all(a);
#pragma unroll
  for (int j = 0; j < 4; ++j) pin(o[j]);
}

// Variants of v2_fp8's 16-head QK (qk_partial<8, true>) for the chain question: kSplit gives each
// n8 tile two accumulator chains (the first and second 64-channel half of the warp's block, summed
// before the scales), kLoadsFirst issues all 16 of the lane's 16-byte loads before the first MMA.
template <bool kSplit, bool kLoadsFirst, bool kTail = true>
__device__ __forceinline__ float qk_variant(float* s_part, const fp8::QOperands& q, const fp8::RawTile& tile) {
  const int lane = threadIdx.x % 32, w = (threadIdx.x / 32) % 4, g = lane / 4, t = lane % 4;
  float acc[2][8][4] = {};
  uint4 x[8][2];
  if constexpr (kLoadsFirst) {
#pragma unroll
    for (int j = 0; j < 8; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) x[j][h] = reinterpret_cast<const uint4*>(tile.row(j * 8 + g) + w * 128)[t + 4 * h];
  }
#pragma unroll
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        if (!kLoadsFirst && i == 0) x[j][h] = reinterpret_cast<const uint4*>(tile.row(j * 8 + g) + w * 128)[t + 4 * h];
        const uint32_t word = i == 0 ? x[j][h].x : i == 1 ? x[j][h].y : i == 2 ? x[j][h].z : x[j][h].w;
        uint32_t b0, b1;
        fp8::e4m3x4_to_f16x2(word, b0, b1);
        mma_f16_16816(acc[kSplit ? h : 0][j], q.latent[4 * h + i], b0, b1);
      }
  if constexpr (!kTail) {  // the MMAs alone: no scales, rope, partial S store
    float sum = 0.f;
#pragma unroll
    for (int j = 0; j < 8; ++j) sum += (acc[0][j][0] + acc[0][j][3]) + (acc[1][j][1] + acc[1][j][2]);
    return sum;
  } else {
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    if constexpr (kSplit)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[0][j][c] += acc[1][j][c];
    const int c0 = j * 8 + 2 * t;
    const float s0 = tile.scale(c0, w), s1 = tile.scale(c0 + 1, w);
    acc[0][j][0] = acc[0][j][0] * s0 * q.unshift[0];
    acc[0][j][1] = acc[0][j][1] * s1 * q.unshift[0];
    acc[0][j][2] = acc[0][j][2] * s0 * q.unshift[1];
    acc[0][j][3] = acc[0][j][3] * s1 * q.unshift[1];
    uint32_t b0, b1;
    ldmatrix_x2(tile.row(j * 8 + lane % 8) + 528 + 2 * (16 * w + ((lane / 8) % 2) * 8), b0, b1);
    mma_bf16_16816(acc[0][j], q.rope, b0, b1);
  }
  float* out = s_part + w * 16 * mlakit::h16::kSPitch;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const int col = j * 8 + 2 * t;
    *reinterpret_cast<float2*>(out + g * mlakit::h16::kSPitch + col) = make_float2(acc[0][j][0], acc[0][j][1]);
    *reinterpret_cast<float2*>(out + (g + 8) * mlakit::h16::kSPitch + col) = make_float2(acc[0][j][2], acc[0][j][3]);
  }
  return 0.f;
  }
}

// WGs warpgroups per CTA, each running the same loops on the same tile (its own partial S).
template <int WGs>
__global__ void __launch_bounds__(128 * WGs, 1) bench(Args x) {
  extern __shared__ __align__(16) uint8_t smem_raw[];
  uint8_t* qt = smem_raw + ((1024 - smem_addr(smem_raw) % 1024) % 1024);  // 9 x 8 KB, 1024-aligned
  uint8_t* pt = qt + kBlocks * kQtBlockBytes;          // 8 KB, 1024-aligned
  uint8_t* tile = pt + kQtBlockBytes;                  // 41,984 B
  uint16_t* q16 = reinterpret_cast<uint16_t*>(tile + kTileBytes);  // [16][kKvPitch]
  const int wg = threadIdx.x / 128;
  float* s_part = reinterpret_cast<float*>(q16 + 16 * mlakit::kernels::kKvPitch) + wg * 4 * 16 * mlakit::h16::kSPitch;
  uint16_t* p16 = reinterpret_cast<uint16_t*>(reinterpret_cast<float*>(q16 + 16 * mlakit::kernels::kKvPitch) +
                                              WGs * 4 * 16 * mlakit::h16::kSPitch);  // [16][kPPitch]
  for (int i = threadIdx.x; i < kQtBlockBytes / 16; i += 128 * WGs)
    reinterpret_cast<uint4*>(pt)[i] = reinterpret_cast<const uint4*>(x.pt)[i];
  for (int i = threadIdx.x; i < 16 * mlakit::h16::kPPitch / 8; i += 128 * WGs)
    reinterpret_cast<uint4*>(p16)[i] = reinterpret_cast<const uint4*>(x.p16)[i];
  for (int i = threadIdx.x; i < kBlocks * kQtBlockBytes / 16; i += 128 * WGs)
    reinterpret_cast<uint4*>(qt)[i] = reinterpret_cast<const uint4*>(x.qt)[i];
  for (int i = threadIdx.x; i < kTileBytes / 16; i += 128 * WGs)
    reinterpret_cast<uint4*>(tile)[i] = reinterpret_cast<const uint4*>(x.tile)[i];
  for (int i = threadIdx.x; i < 16 * mlakit::kernels::kKvPitch / 8; i += 128 * WGs)
    reinterpret_cast<uint4*>(q16)[i] = reinterpret_cast<const uint4*>(x.q16)[i];
  fence_async_smem();
  __syncthreads();
  const int lane = threadIdx.x % 32, w = (threadIdx.x / 32) % 4, g = lane / 4, t = lane % 4;
  float sink = 0.f;

  // The wgmma path: checked once (CTA 0), then timed.
  {
    float d[32], largest[2];
    qk_wgmma_fp8(tile, qt, d, largest);
    if (blockIdx.x == 0 && wg == 0)
#pragma unroll
      for (int j = 0; j < 8; ++j)
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const int slot = 16 * w + g + 8 * (c / 2), head = 8 * j + 2 * t + c % 2;
          x.s[slot * kHeadsW + head] = d[4 * j + c] * largest[c / 2] * x.unshift[head];
        }
  }
  __syncthreads();
  long long t0 = clock64();
  for (int it = 0; it < kIters; ++it) {
    float d[32], largest[2];
    qk_wgmma_fp8(tile, qt, d, largest);
    sink += (d[0] + d[31]) * largest[0];  // fixed indices: the accumulators stay in registers
  }
  __syncthreads();
  long long t1 = clock64();

  // N = 32: each warpgroup the QK of its own 32 heads (rows 32 wg .. of every Q^T block: atom 4 wg).
  __syncthreads();
  long long t32a = clock64();
  for (int it = 0; it < kIters; ++it) {
    float d[16], largest[2];
    qk_wgmma_fp8<32>(tile, qt + wg * 4096, d, largest);
    sink += (d[0] + d[15]) * largest[0];
  }
  __syncthreads();
  long long t32b = clock64();
  if (threadIdx.x == 0) x.n32[blockIdx.x] = (t32b - t32a) / (kIters * WGs);  // per 32-head tile

  // The mma path: v2_fp8's QK of 16 heads over the same tile.
  fp8::QOperands q;
  fp8::load_q_operands(q16, q);
  const fp8::RawTile rt{tile, tile + 32 * kRow, kSlots};
  __syncthreads();
  long long t2 = clock64();
  for (int it = 0; it < kIters; ++it) {
    uint32_t pv_scale[8];
    fp8::qk_partial<8, true>(s_part, q, rt, pv_scale);
    named_barrier_sync(1 + wg, 128);  // the kernel's consumer_sync after QK
    sink += s_part[(it * 37 + threadIdx.x) % (4 * 16 * mlakit::h16::kSPitch)] + __int_as_float(pv_scale[7] & 1);
    named_barrier_sync(1 + wg, 128);
  }
  long long t3 = clock64();
  // The QK variants (cycles per 16-head tile, as the mma path above).
  long long tv[5];
  {
    const auto time_variant = [&](auto split_c, auto first_c, auto tail_c) {
      __syncthreads();
      const long long a0 = clock64();
      for (int it = 0; it < kIters; ++it) {
        sink += qk_variant<decltype(split_c)::value, decltype(first_c)::value, decltype(tail_c)::value>(s_part, q, rt);
        named_barrier_sync(1 + wg, 128);
        sink += s_part[(it * 37 + threadIdx.x) % (4 * 16 * mlakit::h16::kSPitch)];
        named_barrier_sync(1 + wg, 128);
      }
      __syncthreads();
      return (clock64() - a0) / (kIters * WGs);
    };
    tv[0] = time_variant(std::false_type{}, std::false_type{}, std::true_type{});
    tv[1] = time_variant(std::true_type{}, std::false_type{}, std::true_type{});
    tv[2] = time_variant(std::false_type{}, std::true_type{}, std::true_type{});
    tv[3] = time_variant(std::true_type{}, std::true_type{}, std::true_type{});
    tv[4] = time_variant(std::false_type{}, std::false_type{}, std::false_type{});
  }
  if (threadIdx.x == 0)
    for (int v = 0; v < 5; ++v) x.qk_variants[5 * blockIdx.x + v] = tv[v];

  // P V: the wgmma path over all 512 dims (one warpgroup: both halves; two: a half each), checked
  // once (CTA 0), then timed; then v2_fp8's pv_mma over 16 heads.
  {
    float o[4][32];
#pragma unroll
    for (int h2 = 0; h2 < 2 / WGs; ++h2) {  // one warpgroup: both halves; two: its own
      const int half = WGs == 1 ? h2 : wg;
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int i = 0; i < 32; ++i) o[j][i] = 0.f;
      pv_wgmma_fp8(tile, pt, 256 * half, o);
      if (blockIdx.x == 0)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
          for (int i = 0; i < 32; ++i) {
            const int row = i % 4 < 2 ? g : g + 8, head = 8 * (i / 4) + 2 * t + i % 2;
            const int dim = 256 * half + 8 * (8 * w + row % 8) + 2 * j + row / 8;
            x.o[dim * kHeadsW + head] = o[j][i];
          }
    }
  }
  __syncthreads();
  long long t4 = clock64();
  for (int it = 0; it < kIters; ++it) {
    float o[4][32];
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int i = 0; i < 32; ++i) o[j][i] = sink * float(i + j);  // an O to rescale, as per tile
    const float alpha = 0.5f + float(it & 1) * sink;
#pragma unroll
    for (int h2 = 0; h2 < 2 / WGs; ++h2) {
      const int half = WGs == 1 ? h2 : wg;
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int i = 0; i < 32; ++i) o[j][i] *= alpha;  // the online softmax's rescale of O^T
      pv_wgmma_fp8(tile, pt, 256 * half, o);
      sink += o[0][0] + o[3][31];
    }
  }
  __syncthreads();
  long long t5 = clock64();
  uint32_t pv_scale[8];
  fp8::qk_partial<8, true>(s_part, q, rt, pv_scale);
  __syncthreads();
  long long t6 = clock64();
  for (int it = 0; it < kIters; ++it) {
    float o[16][4];
#pragma unroll
    for (int j = 0; j < 16; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) o[j][i] = sink * float(i + j);
    float alpha[2] = {0.5f, 0.5f + float(it & 1) * sink};
    int unit[2] = {it & 3, 0};
    fp8::pv_mma<4, true>(p16, rt, pv_scale, alpha, unit, o);
    sink += o[0][0] + o[15][3] + float(unit[0]);
  }
  __syncthreads();
  long long t7 = clock64();
  if (threadIdx.x == 0) {  // SM cycles per tile: every warpgroup did kIters tiles
    x.pv_cycles[2 * blockIdx.x] = (t5 - t4) / kIters;  // all 512 dims of a tile, over the warpgroups
    x.pv_cycles[2 * blockIdx.x + 1] = (t7 - t6) / (kIters * WGs);
  }
  if (threadIdx.x == 0) {  // SM cycles per tile: every warpgroup did kIters tiles
    x.cycles[2 * blockIdx.x] = (t1 - t0) / (kIters * WGs);
    x.cycles[2 * blockIdx.x + 1] = (t3 - t2) / (kIters * WGs);
  }
  if (sink == 12345.f) x.sink[threadIdx.x] = sink;
}

int run() {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::uniform_int_distribution<int> ed(-6, 3);
  // The tile: E4M3 values of randn, four power-of-two scales per row, bf16 rope.
  std::vector<uint8_t> tile(kTileBytes);
  std::vector<double> kval(size_t(kSlots) * (kLatent + kRope));
  std::vector<uint8_t> lut(256);
  for (int s = 0; s < kSlots; ++s) {
    uint8_t* row = &tile[size_t(s) * kRow];
    float scale[4];
    for (int b = 0; b < 4; ++b) scale[b] = std::ldexp(1.f, ed(rng));
    std::memcpy(row + 512, scale, 16);
    for (int c = 0; c < kLatent; ++c) {
      const uint8_t b = e4m3_of(std::fmax(-448.f, std::fmin(448.f, 64.f * nd(rng))));
      row[c] = b;
      kval[size_t(s) * 576 + c] = double(e4m3_value(b)) * scale[c / 128];
    }
    for (int r = 0; r < kRope; ++r) {
      const uint16_t b = bf16_bits(float(int(nd(rng) * 64.f)) / 64.f);
      std::memcpy(row + 528 + 2 * r, &b, 2);
      kval[size_t(s) * 576 + 512 + r] = bf16_value(b);
    }
  }
  // Q: 64 heads of bf16 randn; Q^T blocks as the smem image; heads 0..15 also as [16][kKvPitch].
  std::vector<float> q(size_t(kHeadsW) * 576);
  for (auto& v : q) v = bf16_value(bf16_bits(float(int(nd(rng) * 256.f)) / 256.f));
  std::vector<uint8_t> qt(size_t(kBlocks) * kQtBlockBytes, 0);
  std::vector<float> unshift(kHeadsW);
  for (int h = 0; h < kHeadsW; ++h) {
    float amax = 0.f;
    for (int c = 0; c < kLatent; ++c) amax = std::fmax(amax, std::fabs(q[size_t(h) * 576 + c]));
    const int shift = int(std::floor(std::log2(amax))) - 14;
    unshift[h] = std::ldexp(1.f, shift);
    auto put = [&](int block, int kbyte, uint16_t bits) {  // head h, byte kbyte (0..127) of its row
      const uint32_t off = (h / 8) * 1024 + (h % 8) * 128 + (((kbyte / 16) ^ (h % 8)) * 16) + kbyte % 16;
      std::memcpy(&qt[size_t(block) * kQtBlockBytes + off], &bits, 2);
    };
    for (int k = 0; k < kLatentSteps; ++k)
      for (int kappa = 0; kappa < 16; ++kappa)
        put(k / 4, (k % 4) * 32 + 2 * kappa, f16_bits(std::ldexp(q[size_t(h) * 576 + latent_channel(k, kappa)], -shift)));
    for (int r = 0; r < kRope; ++r) put(8, 2 * r, bf16_bits(std::ldexp(q[size_t(h) * 576 + 512 + r], -shift)));
  }
  std::vector<uint16_t> q16(size_t(16) * mlakit::kernels::kKvPitch, 0);
  for (int h = 0; h < 16; ++h)
    for (int c = 0; c < 576; ++c) q16[size_t(h) * mlakit::kernels::kKvPitch + c] = bf16_bits(q[size_t(h) * 576 + c]);

  // P: 64 heads x 64 slots in [0, 1) (f16 and bf16 exact: multiples of 2^-8); P^T as the smem image
  // of one swizzled block [head][slot]; heads 0..15 also as [16][kPPitch] bf16 for the mma path.
  std::uniform_int_distribution<int> pd(0, 255);
  std::vector<float> pm(size_t(kHeadsW) * kSlots);
  std::vector<uint8_t> pt(kQtBlockBytes, 0);
  std::vector<uint16_t> p16(size_t(16) * mlakit::h16::kPPitch, 0);
  for (int h = 0; h < kHeadsW; ++h)
    for (int sl = 0; sl < kSlots; ++sl) {
      const float v = float(pd(rng)) / 256.f;
      pm[size_t(h) * kSlots + sl] = v;
      const uint16_t b = f16_bits(v);
      const int kbyte = 2 * sl;
      std::memcpy(&pt[(h / 8) * 1024 + (h % 8) * 128 + (((kbyte / 16) ^ (h % 8)) * 16) + kbyte % 16], &b, 2);
      if (h < 16) p16[size_t(h) * mlakit::h16::kPPitch + sl] = bf16_bits(v);
    }
  // The folded V the wgmma P V multiplies: E4M3 value x 2^(block exponent - the slot's largest).
  std::vector<double> vfold(size_t(kSlots) * kLatent);
  for (int sl = 0; sl < kSlots; ++sl) {
    float sc[4];
    std::memcpy(sc, &tile[size_t(sl) * kRow + 512], 16);
    int e[4], emax = -1000;
    for (int b = 0; b < 4; ++b) e[b] = int(std::lround(std::log2(sc[b]))), emax = std::max(emax, e[b]);
    for (int c = 0; c < kLatent; ++c)
      vfold[size_t(sl) * kLatent + c] = double(e4m3_value(tile[size_t(sl) * kRow + c])) * std::ldexp(1.0, e[c / 128] - emax);
  }

  int sms = 0;
  MICRO_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  uint8_t *d_tile, *d_qt;
  float *d_unshift, *d_s, *d_sink;
  uint16_t* d_q16;
  long long *d_cycles, *d_pv_cycles;
  uint8_t* d_pt;
  uint16_t* d_p16;
  float* d_o;
  MICRO_CHECK(cudaMalloc(&d_pt, pt.size()));
  MICRO_CHECK(cudaMalloc(&d_p16, 2 * p16.size()));
  MICRO_CHECK(cudaMalloc(&d_o, 4 * kLatent * kHeadsW));
  MICRO_CHECK(cudaMalloc(&d_tile, tile.size()));
  MICRO_CHECK(cudaMalloc(&d_qt, qt.size()));
  MICRO_CHECK(cudaMalloc(&d_unshift, 4 * kHeadsW));
  MICRO_CHECK(cudaMalloc(&d_q16, 2 * q16.size()));
  MICRO_CHECK(cudaMalloc(&d_s, 4 * kSlots * kHeadsW));
  MICRO_CHECK(cudaMalloc(&d_sink, 4 * 128));
  MICRO_CHECK(cudaMalloc(&d_cycles, 16 * sms));
  MICRO_CHECK(cudaMalloc(&d_pv_cycles, 16 * sms));
  MICRO_CHECK(cudaMemcpy(d_pt, pt.data(), pt.size(), cudaMemcpyHostToDevice));
  MICRO_CHECK(cudaMemcpy(d_p16, p16.data(), 2 * p16.size(), cudaMemcpyHostToDevice));
  MICRO_CHECK(cudaMemcpy(d_tile, tile.data(), tile.size(), cudaMemcpyHostToDevice));
  MICRO_CHECK(cudaMemcpy(d_qt, qt.data(), qt.size(), cudaMemcpyHostToDevice));
  MICRO_CHECK(cudaMemcpy(d_unshift, unshift.data(), 4 * kHeadsW, cudaMemcpyHostToDevice));
  MICRO_CHECK(cudaMemcpy(d_q16, q16.data(), 2 * q16.size(), cudaMemcpyHostToDevice));
  long long *d_qkv, *d_n32;
  MICRO_CHECK(cudaMalloc(&d_qkv, 40 * sms));
  MICRO_CHECK(cudaMalloc(&d_n32, 8 * sms));
  const Args args{d_n32, d_qkv, d_pt, d_p16, d_o, d_pv_cycles, d_tile, d_qt, d_unshift, d_q16, d_s, d_cycles, d_sink};
  bool ok = true;
  const auto measure = [&](auto wgs_c) -> int {
    constexpr int kWgs = decltype(wgs_c)::value;
    const size_t smem = size_t(kBlocks + 1) * kQtBlockBytes + kTileBytes + 2 * q16.size() +
                        size_t(kWgs) * 4 * 4 * 16 * mlakit::h16::kSPitch + 2 * p16.size() + 1024;
    MICRO_CHECK(cudaFuncSetAttribute(bench<kWgs>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    MICRO_CHECK(cudaMemset(d_s, 0xff, 4 * kSlots * kHeadsW));  // NaN until written
    MICRO_CHECK(cudaMemset(d_o, 0xff, 4 * kLatent * kHeadsW));
    for (int rep = 0; rep < 2; ++rep) bench<kWgs><<<sms, 128 * kWgs, smem>>>(args);
    MICRO_CHECK(cudaGetLastError());
    MICRO_CHECK(cudaDeviceSynchronize());
    std::vector<float> s(size_t(kSlots) * kHeadsW);
    MICRO_CHECK(cudaMemcpy(s.data(), d_s, 4 * s.size(), cudaMemcpyDeviceToHost));
    double max_ref = 0.0, max_err = 0.0;
    for (int sl = 0; sl < kSlots; ++sl)
      for (int h = 0; h < kHeadsW; ++h) {
        double ref = 0.0;
        for (int c = 0; c < 576; ++c) ref += double(q[size_t(h) * 576 + c]) * kval[size_t(sl) * 576 + c];
        max_ref = std::fmax(max_ref, std::fabs(ref));
        const double got = s[size_t(sl) * kHeadsW + h];
        max_err = std::isfinite(got) ? std::fmax(max_err, std::fabs(ref - got)) : INFINITY;
      }
    std::vector<float> o(size_t(kLatent) * kHeadsW);
    MICRO_CHECK(cudaMemcpy(o.data(), d_o, 4 * o.size(), cudaMemcpyDeviceToHost));
    double max_oref = 0.0, max_oerr = 0.0;
    for (int dim = 0; dim < kLatent; ++dim)
      for (int h = 0; h < kHeadsW; ++h) {
        double ref = 0.0;
        for (int sl = 0; sl < kSlots; ++sl) ref += double(pm[size_t(h) * kSlots + sl]) * vfold[size_t(sl) * kLatent + dim];
        max_oref = std::fmax(max_oref, std::fabs(ref));
        const double got = o[size_t(dim) * kHeadsW + h];
        max_oerr = std::isfinite(got) ? std::fmax(max_oerr, std::fabs(ref - got)) : INFINITY;
      }
    std::vector<long long> pvc(2 * sms);
    MICRO_CHECK(cudaMemcpy(pvc.data(), d_pv_cycles, 16 * sms, cudaMemcpyDeviceToHost));
    std::vector<long long> pw, pmm;
    for (int b = 0; b < sms; ++b) pw.push_back(pvc[2 * b]), pmm.push_back(pvc[2 * b + 1]);
    const bool pv_good = max_oerr <= 1e-3 * max_oref;
    std::vector<long long> cycles(2 * sms);
    MICRO_CHECK(cudaMemcpy(cycles.data(), d_cycles, 16 * sms, cudaMemcpyDeviceToHost));
    std::vector<long long> cw, cm;
    for (int b = 0; b < sms; ++b) cw.push_back(cycles[2 * b]), cm.push_back(cycles[2 * b + 1]);
    const bool good = max_err <= 1e-3 * max_ref;
    ok = ok && good && pv_good;
    std::printf("%d warpgroup(s) per SM: check: wgmma S^T against fp64, max |err| %.3g of max |S| %.3g (%s)\n", kWgs,
                max_err, max_ref, good ? "ok" : "FAILED");
    std::printf("  SM cycles per 64-slot tile, median over %d SMs: wgmma, 64 heads %lld; mma.sync (v2_fp8's QK), 16 heads "
                "%lld (x 4 = %lld for 64 heads)\n",
                sms, median(cw), median(cm), 4 * median(cm));
    std::vector<long long> qkv(5 * sms);
    MICRO_CHECK(cudaMemcpy(qkv.data(), d_qkv, 40 * sms, cudaMemcpyDeviceToHost));
    std::vector<long long> n32(sms);
    MICRO_CHECK(cudaMemcpy(n32.data(), d_n32, 8 * sms, cudaMemcpyDeviceToHost));
    std::printf("  QK by wgmma at N = 32 (a warpgroup per 32 heads): %lld SM cycles per 32-head tile (x 2 = %lld for 64 heads)\n",
                median(n32), 2 * median(n32));
    std::printf("  QK of 16 heads, variants (SM cycles per tile):");
    const char* names[5] = {"as the kernel", "two chains per n8 tile", "loads first", "both",
                            "the MMAs alone (no scales, rope, store)"};
    for (int v = 0; v < 5; ++v) {
      std::vector<long long> c;
      for (int b = 0; b < sms; ++b) c.push_back(qkv[5 * b + v]);
      std::printf(" %s %lld;", names[v], median(c));
    }
    std::printf("\n");
    std::printf("  P V: check of the wgmma O^T against fp64, max |err| %.3g of max |O| %.3g (%s); SM cycles per tile: "
                "wgmma, 512 dims x 64 heads %lld; mma.sync (v2_fp8's pv_mma), 16 heads %lld (x 4 = %lld)\n",
                max_oerr, max_oref, pv_good ? "ok" : "FAILED", median(pw), median(pmm), 4 * median(pmm));
    return 0;
  };
  if (measure(std::integral_constant<int, 1>{}) != 0) return 1;
  if (measure(std::integral_constant<int, 2>{}) != 0) return 1;
  return ok ? 0 : 1;
}

}  // namespace

int main() { return run(); }
