// A position in a ring of `Stages` buffers, each guarded by a full and an empty mbarrier (or a
// single-buffer hand-off: Stages = 1). Use k of the ring takes buffer k % Stages, and the k-th
// round of a buffer's barriers completes phase (k / Stages) % 2: the consumers of use k wait for
// that phase of its full barrier, its producer for the other phase of its empty barrier (the
// consumers' release of use k - Stages; the first round passes at once). One type computes the
// buffer and the parity together, so no call site derives a parity by hand. `Count` is the use
// counter's type: the walks keep theirs as they were (int, or int64_t across a CTA's pieces).
#pragma once

#include <cstdint>

#include "kernels/common/async_pipe.cuh"

namespace mlakit::kernels {

template <int Stages, class Count = int>
struct Ring {
  static_assert(Stages >= 1, "a ring holds at least one buffer");
  Count use = 0;  // uses of the ring so far: the position of the next one

  __device__ __forceinline__ int buffer() const { return int(use % Stages); }
  // The phase of this use's full barrier (what its consumers wait for).
  __device__ __forceinline__ uint32_t full_parity() const { return uint32_t((use / Stages) & 1); }
  // The phase of its empty barrier its producer waits for.
  __device__ __forceinline__ uint32_t empty_parity() const { return full_parity() ^ 1u; }
  __device__ __forceinline__ Ring at(Count k) const { return Ring{use + k}; }  // use + k
  __device__ __forceinline__ Ring& operator+=(Count k) {
    use += k;
    return *this;
  }
  __device__ __forceinline__ Ring& operator++() { return *this += 1; }

  // The barriers of this use's buffer in arrays of Stages barriers.
  __device__ __forceinline__ void wait_full(uint64_t* full) const { mbar_wait(&full[buffer()], full_parity()); }
  __device__ __forceinline__ void wait_empty(uint64_t* empty) const { mbar_wait(&empty[buffer()], empty_parity()); }
  __device__ __forceinline__ void release(uint64_t* empty) const { mbar_arrive(&empty[buffer()]); }
};

}  // namespace mlakit::kernels
