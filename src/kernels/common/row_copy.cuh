// One KV row (or one query row: 512 latent + 64 rope values) into a shared-memory row of pitch
// kKvPitch by one warp's 16-byte cp.async: the copy both ops' ring kernels and their Q loads use.
#pragma once

#include <cstdint>

#include "kernels/common/async_pipe.cuh"
#include "kernels/common/gather.cuh"
#include "kernels/common/kv_rows.h"

namespace mlakit::kernels {

// Warp-wide: one row by 16-byte cp.async (zeros when not valid), each copy by
// copy16(smem, gmem, valid).
template <class Copy16>
__device__ __forceinline__ void cp_async_row_by(uint16_t* dst, const uint16_t* ckv, const uint16_t* kpe, bool valid,
                                                Copy16&& copy16) {
  const int lane = threadIdx.x % 32;
  copy16(dst + lane * 8, ckv + lane * 8, valid);
  copy16(dst + kDimV / 2 + lane * 8, ckv + kDimV / 2 + lane * 8, valid);
  if (lane < kDimR / 8) copy16(dst + kDimV + lane * 8, kpe + lane * 8, valid);
}
// ... under L2 cache policy `policy`.
__device__ __forceinline__ void cp_async_row(uint16_t* dst, const uint16_t* ckv, const uint16_t* kpe,
                                             bool valid, uint64_t policy) {
  cp_async_row_by(dst, ckv, kpe, valid,
                  [policy](void* d, const void* g, bool v) { cp_async_16_hint(d, g, v, policy); });
}
// ... with no cache hint.
__device__ __forceinline__ void cp_async_row(uint16_t* dst, const uint16_t* ckv, const uint16_t* kpe, bool valid) {
  cp_async_row_by(dst, ckv, kpe, valid, [](void* d, const void* g, bool v) { cp_async_16(d, g, v); });
}
static_assert(kDimV / 2 == 32 * 8, "two 512-byte warp copies cover one ckv row");

// Q of one token (heads x (512 | 64)) into rows of pitch kKvPitch by one warp's 16-byte
// cp.async with no cache hint (every CTA of the token reads it; an explicit evict_normal hint was
// slower: docs/knowledge/copies.md). Issues the copies only: the caller
// tracks them (cp_async_arrive_on or cp_async_wait).
__device__ inline void load_query(const uint16_t* q_nope, int64_t q_nope_stride_h, const uint16_t* q_pe,
                                  int64_t q_pe_stride_h, int heads, uint16_t* dst) {
  for (int h = 0; h < heads; ++h)
    cp_async_row(dst + h * kKvPitch, q_nope + h * q_nope_stride_h, q_pe + h * q_pe_stride_h, true);
}

}  // namespace mlakit::kernels
