// The host FP8 codec: plain bit arithmetic, no hardware conversion, so that it can check the GPU's.
#include "reference/dsa/fp8.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/bf16.h"
#include "base/parallel.h"
#include "mlakit/dsa_fp8.h"

namespace mlakit::fp8 {
namespace {

using namespace mlakit::dsa_fp8;
constexpr int kCkvDims = kNopeBytes;      // 512 channels, one e4m3 byte each
constexpr int kKpeDims = kRopeBytes / 2;  // 64 bf16

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Calls f(first, last) on about equal slot ranges, one thread each (at least 4096 slots apiece).
template <class F>
void parallel_slots(int64_t num_slots, int num_threads, F&& f) {
  run_ranges(num_slots, worker_count(num_threads, std::max<int64_t>(1, num_slots / 4096)), 1, f);
}

}  // namespace

uint8_t e4m3_from_float(float x) {
  const uint8_t sign = uint8_t((bits_of(x) >> 24) & 0x80u);
  if (std::isnan(x)) return sign | 0x7f;
  const float a = std::fabs(x);
  if (a >= kE4m3Max) return sign | 0x7e;  // 448; everything above saturates
  if (a < 0.015625f) {                     // below 2^-6: subnormal steps of 2^-9 (8 rounds up to 2^-6)
    return sign | uint8_t(std::nearbyint(a * 512.f));
  }
  int e = 0;
  std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1)
  --e;                // a = 1.m * 2^e, e in [-6, 8]
  int m = int(std::nearbyint((std::ldexp(a, -e) - 1.f) * 8.f));  // exact operands, ties to even
  if (m == 8) m = 0, ++e;
  return sign | uint8_t((e + 7) << 3) | uint8_t(m);
}

float e4m3_to_float(uint8_t bits) {
  const int e = (bits >> 3) & 15, m = bits & 7;
  float v;
  if (e == 15 && m == 7) v = NAN;
  else if (e == 0) v = std::ldexp(float(m), -9);
  else v = std::ldexp(1.f + float(m) / 8.f, e - 7);
  return bits & 0x80 ? -v : v;
}

float tile_scale(float amax) {
  const float r = std::max(amax / kE4m3Max, kMinScale);
  uint32_t u = bits_of(r);
  if (u & 0x007fffffu) u = (u & 0xff800000u) + 0x00800000u;  // up to the next power of two
  return float_of(u);
}

void quantize_row(const uint16_t* ckv, const uint16_t* kpe, uint8_t* row) {
  float scales[kNumScales];
  for (int i = 0; i < kNumScales; ++i) {
    float amax = 0.f;
    for (int d = i * kTile; d < (i + 1) * kTile; ++d) amax = std::max(amax, std::fabs(bf16_to_float(ckv[d])));
    scales[i] = tile_scale(amax);
    const float inv = 1.f / scales[i];  // a power of two: exact
    for (int d = i * kTile; d < (i + 1) * kTile; ++d) row[d] = e4m3_from_float(bf16_to_float(ckv[d]) * inv);
  }
  std::memcpy(row + kScaleOffset, scales, sizeof scales);
  std::memcpy(row + kRopeOffset, kpe, kRopeBytes);
}

void dequantize_row(const uint8_t* row, uint16_t* ckv, uint16_t* kpe) {
  float scales[kNumScales];
  std::memcpy(scales, row + kScaleOffset, sizeof scales);
  for (int d = 0; d < kCkvDims; ++d) ckv[d] = float_to_bf16(e4m3_to_float(row[d]) * scales[d / kTile]);
  std::memcpy(kpe, row + kRopeOffset, kRopeBytes);
}

void quantize_cache(const uint16_t* ckv, const uint16_t* kpe, int64_t num_slots, uint8_t* cache,
                    int num_threads) {
  parallel_slots(num_slots, num_threads, [&](int64_t first, int64_t last) {
    for (int64_t s = first; s < last; ++s) quantize_row(ckv + s * kCkvDims, kpe + s * kKpeDims, cache + s * kRowBytes);
  });
}

void dequantize_cache(const uint8_t* cache, int64_t num_slots, uint16_t* ckv, uint16_t* kpe, int num_threads) {
  parallel_slots(num_slots, num_threads, [&](int64_t first, int64_t last) {
    for (int64_t s = first; s < last; ++s) dequantize_row(cache + s * kRowBytes, ckv + s * kCkvDims, kpe + s * kKpeDims);
  });
}

}  // namespace mlakit::fp8
