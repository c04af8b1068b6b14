// Reductions for the m16n8 accumulator layout: lane L holds rows L/4 and L/4 + 8, and the four
// lanes of a quad (L % 4) hold the 8 columns of one n8 tile.
#pragma once

namespace mlakit::kernels {

__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}

__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// 2^x with the SFU's approximation (2 ulp); ex2(-inf) = +0, which masking relies on.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// The finish of a softmax row, 1 / l and log2(l) for l >= 1 (a row's sum holds 2^0 for its
// maximum): the SFU's approximations, one instruction each (2 ulp of 1 / l, ~2^-22 absolute in
// log2 l: far inside the bf16 output's rounding and the lse tolerance). With the IEEE forms
// (rcp.rn: refinement and a slow-path test; log2f: a polynomial) the output store waits on long
// dependent chains, on the critical path of every row (docs/knowledge/epilogue.md).
__device__ __forceinline__ float fast_rcp(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float fast_log2(float x) {
  float y;
  asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// The row maximum used as the exponent origin: -inf (no valid slot yet) maps to 0 so that
// exp2(-inf - origin) = 0 and no inf - inf = NaN appears.
__device__ __forceinline__ float softmax_origin(float m) { return m == -INFINITY ? 0.f : m; }

// An attention sink's share of a row's denominator, 2^(sink log2(e) - origin): the sum l of the
// row's 2^(x - origin) plus this normalises the output. Added before the one reciprocal of the
// epilogue, so the output is rounded to bf16 once. A sink of +inf makes the output 0, -inf leaves
// it. `head_of()` gives the row's head; it runs only with a sink (`sink` null: 0, the plain
// softmax), so that a call without one does no index arithmetic in its epilogue or merge.
template <class Head>
__device__ __forceinline__ float sink_share(const float* sink, Head&& head_of, float m) {
  return sink == nullptr ? 0.f : exp2f(fmaf(sink[head_of()], 1.4426950408889634f, -softmax_origin(m)));
}

}  // namespace mlakit::kernels
