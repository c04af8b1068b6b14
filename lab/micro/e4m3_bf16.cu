// Checks v2_fp8 h64's producer dequantization (dequantize_word, v2_fp8/h64.cuh) bit for bit: every
// E4M3 code (the 256 bytes: subnormals, zeros, NaN 0x7f / 0xff) times every power-of-two scale 2^e,
// e = -20..20, and a few scales that are not powers of two, against the exact product rounded once
// to bf16 on the host (NaN codes: any NaN). Prints the mismatches and exits 1 on any.
//
//   cmake --build build --target mlakit_micro_e4m3_bf16   (configured with -DMLAKIT_BUILD_LAB=ON)
//   build/lab/e4m3_bf16
// Quoted in docs/kernels/dsa_decode_v2_fp8.md (step 18).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "kernels/dsa_decode/v2_fp8/h64.cuh"
#include "micro.h"

namespace {

// out[s * 256 + code] = bf16 bits of E4M3 `code` times scales[s], as the producer computes it.
__global__ void dequantize_all(const float* scales, int num_scales, uint16_t* out) {
  const int s = blockIdx.x, code = threadIdx.x;  // 64 threads x 4 codes each
  if (s >= num_scales) return;
  const uint32_t w = uint32_t(4 * code) | uint32_t(4 * code + 1) << 8 | uint32_t(4 * code + 2) << 16 |
                     uint32_t(4 * code + 3) << 24;
  uint32_t lo, hi;
  mlakit::dsa_v2_fp8::h64::dequantize_word(w, scales[s], lo, hi);
  uint16_t* o = out + s * 256 + 4 * code;
  o[0] = uint16_t(lo), o[1] = uint16_t(lo >> 16), o[2] = uint16_t(hi), o[3] = uint16_t(hi >> 16);
}

double e4m3_value(int code) {  // OCP E4M3 (fn): bias 7, no infinities; 0x7f / 0xff are NaN
  const int sign = code >> 7, e = (code >> 3) & 15, m = code & 7;
  if (e == 15 && m == 7) return NAN;
  const double v = e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1.0 + m / 8.0, e - 7);
  return sign ? -v : v;
}

uint16_t to_bf16(double v) {  // round to nearest even, through fp32 (exact here: v is an fp32 value)
  float f = float(v);
  uint32_t b;
  std::memcpy(&b, &f, 4);
  if (std::isnan(f)) return 0x7fc0;
  b += 0x7fff + ((b >> 16) & 1);
  return uint16_t(b >> 16);
}

}  // namespace

int main() {
  std::vector<float> scales;
  for (int e = -20; e <= 20; ++e) scales.push_back(std::ldexp(1.f, e));
  for (float f : {0.75f, 3.0f, 1e-3f, 123.456f}) scales.push_back(f);
  const int n = int(scales.size());
  float* d_scales = nullptr;
  uint16_t* d_out = nullptr;
  MICRO_CHECK(cudaMalloc(&d_scales, n * sizeof(float)));
  MICRO_CHECK(cudaMalloc(&d_out, n * 256 * sizeof(uint16_t)));
  MICRO_CHECK(cudaMemcpy(d_scales, scales.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  dequantize_all<<<n, 64>>>(d_scales, n, d_out);
  MICRO_CHECK(cudaGetLastError());
  std::vector<uint16_t> out(size_t(n) * 256);
  MICRO_CHECK(cudaMemcpy(out.data(), d_out, out.size() * sizeof(uint16_t), cudaMemcpyDeviceToHost));
  int bad = 0;
  for (int s = 0; s < n; ++s)
    for (int code = 0; code < 256; ++code) {
      const double v = e4m3_value(code);
      const uint16_t want = to_bf16(v * double(scales[s])), got = out[s * 256 + code];
      if (std::isnan(v) ? (got & 0x7fff) <= 0x7f80 : got != want)
        if (bad++ < 20)
          std::printf("scale %g code 0x%02x: got 0x%04x want 0x%04x\n", scales[s], code, got, want);
    }
  std::printf("%d scales x 256 codes: %d mismatches\n", n, bad);
  return bad == 0 ? 0 : 1;
}
