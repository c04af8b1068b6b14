// The log-sum-exp merge of one output chunk (8 dims of one query row) over partials: O_j of the
// chunk's dims, m_j the partial's running max (log2 domain) and l_j its sum of 2^(x - m_j). Folded
// in the caller's fixed order (deterministic), rescaled whenever the running max grows:
// O = sum_j 2^(m_j - M) O_j / sum_j 2^(m_j - M) l_j. A partial with l_j = 0 (nothing seen, or past
// the splits) is skipped. Shared by the in-kernel merges of dsa_decode (v2_fused, v2_fp8) and
// mla_decode (v1_paged).
#pragma once

#include <cstdint>

#include "kernels/common/mma.cuh"
#include "kernels/common/softmax.cuh"

namespace mlakit::kernels {

struct ChunkMerge {
  float acc[8] = {}, m = -INFINITY, l = 0.f;

  __device__ __forceinline__ void add(float m_j, float l_j, const float4& a, const float4& b) {
    if (!(l_j > 0.f)) return;
    const float m_new = fmaxf(m, m_j);
    const float keep = exp2f(m - m_new), w = exp2f(m_j - m_new);  // exp2(-inf) = 0
    l = l * keep + w * l_j;
    acc[0] = acc[0] * keep + w * a.x, acc[1] = acc[1] * keep + w * a.y;
    acc[2] = acc[2] * keep + w * a.z, acc[3] = acc[3] * keep + w * a.w;
    acc[4] = acc[4] * keep + w * b.x, acc[5] = acc[5] * keep + w * b.y;
    acc[6] = acc[6] * keep + w * b.z, acc[7] = acc[7] * keep + w * b.w;
    m = m_new;
  }

  // Folds the states of `width` lanes `stride` apart (width x stride a power of two up to 32, the
  // same in every lane of the warp, which all call it) by an xor tree of shuffles: every lane ends
  // with the fold of its aligned group, the group's first lane in a fixed order (deterministic).
  __device__ __forceinline__ void fold_lanes(int width, int stride = 1) {
    for (int d = stride; d < width * stride; d *= 2) {
      const float m_j = __shfl_xor_sync(0xffffffffu, m, d), l_j = __shfl_xor_sync(0xffffffffu, l, d);
      float o[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) o[i] = __shfl_xor_sync(0xffffffffu, acc[i], d);
      add(m_j, l_j, make_float4(o[0], o[1], o[2], o[3]), make_float4(o[4], o[5], o[6], o[7]));
    }
  }

  // O / (l + extra) as eight bf16 (one 16-byte store); 0 for a chunk that saw nothing. `extra`: an
  // attention sink's share of the denominator (sink_share at m).
  __device__ __forceinline__ uint4 output(float extra = 0.f) const {
    return pack_bf16x8(acc, l > 0.f ? fast_rcp(l + extra) : 0.f);
  }
  // The row's lse (base 2); -inf for a row that saw nothing.
  __device__ __forceinline__ float lse() const { return l > 0.f ? m + fast_log2(l) : -INFINITY; }
};

}  // namespace mlakit::kernels
