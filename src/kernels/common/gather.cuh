// Asynchronous 16-byte row gathers (cp.async.cg: bypasses L1, lands in shared memory) with
// zero-fill for masked chunks, so padded slots contribute exact zeros to P*V.
#pragma once

#include <cute/arch/copy_sm80.hpp>

namespace mlakit::kernels {

// Copies 16 bytes gmem -> smem when `pred`, else writes 16 zero bytes (no global read).
// `gmem` must still be a valid address: callers pass the tensor base for masked chunks.
__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem, bool pred) {
  cute::SM80_CP_ASYNC_CACHEGLOBAL_ZFILL<cute::uint128_t>::copy(
      *reinterpret_cast<const cute::uint128_t*>(gmem), *reinterpret_cast<cute::uint128_t*>(smem),
      pred);
}

// Copies 4 bytes gmem -> smem (cp.async.ca: the only width below 16 bytes), for data that is not
// 16-byte aligned.
__device__ __forceinline__ void cp_async_4(void* smem, const void* gmem) {
  cute::SM80_CP_ASYNC_CACHEALWAYS<uint32_t>::copy(*reinterpret_cast<const uint32_t*>(gmem),
                                                   *reinterpret_cast<uint32_t*>(smem));
}

__device__ __forceinline__ void cp_async_commit() { cute::cp_async_fence(); }

template <int N>
__device__ __forceinline__ void cp_async_wait() {
  cute::cp_async_wait<N>();
}

}  // namespace mlakit::kernels
