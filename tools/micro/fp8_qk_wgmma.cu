// Micro-benchmark: the QK step of one 64-slot tile of FP8 cache rows (656 bytes: 512 E4M3, four
// fp32 scales, 64 bf16 rope) against 64 query heads, on one warpgroup per SM, every SM at once:
//   wgmma: the transposed formulation S^T[64 slots x 64 heads] = K Q^T with wgmma m64n64k16, K as
//          the register A operand widened from the raw rows (one 16-byte shared load per four k16
//          steps and row, one cvt per E4M3 pair, each 128-channel block multiplied by
//          2^(its scale's exponent - the slot's largest) so that f16 holds it; the rope as bf16 times
//          2^-largest), Q^T in 128-byte-swizzled shared memory (f16, each head shifted into
//          [2^14, 2^15); the rope block bf16), the slot's largest scale and the head's shift applied
//          to S^T at the end;
//   mma:   v2_fp8's own QK (qk_partial: m16n8k16, 16 heads as M, one warp per 128-channel block, the
//          partial S to shared memory), once per tile: four of these are 64 heads.
// Prints SM cycles per tile (median over the CTAs) of each, and checks the wgmma S^T against a host
// reference (fp64 on the dequantized values) before timing.
//
//   nvcc -std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -I src \
//        -I include -I build/include -I .deps/cutlass/include -o /tmp/fp8_qk tools/micro/fp8_qk_wgmma.cu
//   /tmp/fp8_qk
//
// Evidence for docs/kernels/dsa_decode_v2_fp8.md ("More heads": the wgmma route's first measurement).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

#include "kernels/common/wgmma.cuh"
#include "kernels/dsa_decode/v2_fp8/kernel.cuh"
#include "kernels/dsa_decode/v2_fused/consumer_wgmma.cuh"  // sw128_offset, sw128_desc

#include "micro.h"

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

template <class Op>
__device__ __forceinline__ void wgmma_64x64(const uint32_t (&a)[4], uint64_t desc, float (&d)[32]) {
  Op::fma(a[0], a[1], a[2], a[3], desc, d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], d[9], d[10], d[11],
          d[12], d[13], d[14], d[15], d[16], d[17], d[18], d[19], d[20], d[21], d[22], d[23], d[24], d[25], d[26],
          d[27], d[28], d[29], d[30], d[31], cute::SM90::GMMA::ScaleOut::One);
}

__device__ __forceinline__ int expo(float x) { return int((__float_as_uint(x) >> 23) & 0xff) - 127; }

// S^T of the tile into d (units: 2^-(largest_slot + shift_head)); `largest` the lane's rows' 2^e.
__device__ __forceinline__ void qk_wgmma_fp8(const uint8_t* tile, const uint8_t* qt, float (&d)[32], float (&largest)[2]) {
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
  for (int i = 0; i < 32; ++i) d[i] = 0.f;
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
      wgmma_64x64<Wgmma64x64F16>(buf[i], mlakit::dsa_v2::sw128_desc(qt + (k / 4) * kQtBlockBytes, (k % 4) * 32), d);
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
    wgmma_64x64<Wgmma64x64Bf16>(ra[k], mlakit::dsa_v2::sw128_desc(qt + 8 * kQtBlockBytes, k * 32), d);
  wgmma_commit();
  wgmma_wait<0>();
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) pin(a[i][j]);
#pragma unroll
  for (int k = 0; k < 4; ++k) pin(ra[k]);
  pin(d);
}

// WGs warpgroups per CTA, each running the same loops on the same tile (its own partial S).
template <int WGs>
__global__ void __launch_bounds__(128 * WGs, 1) bench(Args x) {
  extern __shared__ __align__(16) uint8_t smem_raw[];
  uint8_t* qt = smem_raw + ((1024 - smem_addr(smem_raw) % 1024) % 1024);  // 9 x 8 KB, 1024-aligned
  uint8_t* tile = qt + kBlocks * kQtBlockBytes;        // 41,984 B
  uint16_t* q16 = reinterpret_cast<uint16_t*>(tile + kTileBytes);  // [16][kKvPitch]
  const int wg = threadIdx.x / 128;
  float* s_part = reinterpret_cast<float*>(q16 + 16 * mlakit::dsa_v2::kKvPitch) + wg * 4 * 16 * mlakit::dsa_v2::kSPitch;
  for (int i = threadIdx.x; i < kBlocks * kQtBlockBytes / 16; i += 128 * WGs)
    reinterpret_cast<uint4*>(qt)[i] = reinterpret_cast<const uint4*>(x.qt)[i];
  for (int i = threadIdx.x; i < kTileBytes / 16; i += 128 * WGs)
    reinterpret_cast<uint4*>(tile)[i] = reinterpret_cast<const uint4*>(x.tile)[i];
  for (int i = threadIdx.x; i < 16 * mlakit::dsa_v2::kKvPitch / 8; i += 128 * WGs)
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
    sink += d[it % 32] * largest[0];
  }
  __syncthreads();
  long long t1 = clock64();

  // The mma path: v2_fp8's QK of 16 heads over the same tile.
  fp8::QOperands q;
  fp8::load_q_operands(q16, q);
  const fp8::RawTile rt{{tile, tile + 32 * kRow}, kSlots};
  __syncthreads();
  long long t2 = clock64();
  for (int it = 0; it < kIters; ++it) {
    uint32_t pv_scale[8];
    fp8::qk_partial<8, true>(s_part, q, rt, pv_scale);
    named_barrier_sync(1 + wg, 128);  // the kernel's consumer_sync after QK
    sink += s_part[(it * 37 + threadIdx.x) % (4 * 16 * mlakit::dsa_v2::kSPitch)] + __int_as_float(pv_scale[it % 8] & 1);
    named_barrier_sync(1 + wg, 128);
  }
  long long t3 = clock64();
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
  std::vector<uint16_t> q16(size_t(16) * mlakit::dsa_v2::kKvPitch, 0);
  for (int h = 0; h < 16; ++h)
    for (int c = 0; c < 576; ++c) q16[size_t(h) * mlakit::dsa_v2::kKvPitch + c] = bf16_bits(q[size_t(h) * 576 + c]);

  int sms = 0;
  MICRO_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  uint8_t *d_tile, *d_qt;
  float *d_unshift, *d_s, *d_sink;
  uint16_t* d_q16;
  long long* d_cycles;
  MICRO_CHECK(cudaMalloc(&d_tile, tile.size()));
  MICRO_CHECK(cudaMalloc(&d_qt, qt.size()));
  MICRO_CHECK(cudaMalloc(&d_unshift, 4 * kHeadsW));
  MICRO_CHECK(cudaMalloc(&d_q16, 2 * q16.size()));
  MICRO_CHECK(cudaMalloc(&d_s, 4 * kSlots * kHeadsW));
  MICRO_CHECK(cudaMalloc(&d_sink, 4 * 128));
  MICRO_CHECK(cudaMalloc(&d_cycles, 16 * sms));
  MICRO_CHECK(cudaMemcpy(d_tile, tile.data(), tile.size(), cudaMemcpyHostToDevice));
  MICRO_CHECK(cudaMemcpy(d_qt, qt.data(), qt.size(), cudaMemcpyHostToDevice));
  MICRO_CHECK(cudaMemcpy(d_unshift, unshift.data(), 4 * kHeadsW, cudaMemcpyHostToDevice));
  MICRO_CHECK(cudaMemcpy(d_q16, q16.data(), 2 * q16.size(), cudaMemcpyHostToDevice));
  const Args args{d_tile, d_qt, d_unshift, d_q16, d_s, d_cycles, d_sink};
  bool ok = true;
  const auto measure = [&](auto wgs_c) -> int {
    constexpr int kWgs = decltype(wgs_c)::value;
    const size_t smem = size_t(kBlocks) * kQtBlockBytes + kTileBytes + 2 * q16.size() +
                        size_t(kWgs) * 4 * 4 * 16 * mlakit::dsa_v2::kSPitch + 1024;
    MICRO_CHECK(cudaFuncSetAttribute(bench<kWgs>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    MICRO_CHECK(cudaMemset(d_s, 0xff, 4 * kSlots * kHeadsW));  // NaN until written
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
    std::vector<long long> cycles(2 * sms);
    MICRO_CHECK(cudaMemcpy(cycles.data(), d_cycles, 16 * sms, cudaMemcpyDeviceToHost));
    std::vector<long long> cw, cm;
    for (int b = 0; b < sms; ++b) cw.push_back(cycles[2 * b]), cm.push_back(cycles[2 * b + 1]);
    const bool good = max_err <= 1e-3 * max_ref;
    ok = ok && good;
    std::printf("%d warpgroup(s) per SM: check: wgmma S^T against fp64, max |err| %.3g of max |S| %.3g (%s)\n", kWgs,
                max_err, max_ref, good ? "ok" : "FAILED");
    std::printf("  SM cycles per 64-slot tile, median over %d SMs: wgmma, 64 heads %lld; mma.sync (v2_fp8's QK), 16 heads "
                "%lld (x 4 = %lld for 64 heads)\n",
                sms, median(cw), median(cm), 4 * median(cm));
    return 0;
  };
  if (measure(std::integral_constant<int, 1>{}) != 0) return 1;
  if (measure(std::integral_constant<int, 2>{}) != 0) return 1;
  return ok ? 0 : 1;
}

}  // namespace

int main() { return run(); }
