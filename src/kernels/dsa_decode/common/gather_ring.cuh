// The producer side of the gathered-row ring: Producers warps walk a CTA's compacted slots in
// stages of kStageRows rows (stage i by producer warp i % Producers) and fill a Stages-deep ring
// in shared memory, each stage guarded by two mbarriers (full: the rows arrived; empty: the
// consumers are done with the stage).
//
// How a row (ckv 1024 B | kpe 128 B -> one 1168-byte smem row) moves, the Gather argument:
//   kBulk     lane r issues two cp.async.bulk copies for row r; the full barrier counts their
//             bytes (32 arrivals per phase: lane 0's arrive.expect_tx and the other lanes').
//   kCpAsync  the warp moves the stage row after row with 16-byte cp.async (lane L: chunks L and
//             L + 32 of ckv, L < 8: chunk L of kpe); each lane's cp.async.mbarrier.arrive
//             completes the phase (32 arrivals).
//   kHybrid   lane r bulk-copies the ckv part of row r; the kpe parts move by cp.async, four rows
//             per warp instruction (33 arrivals: lane 0's expect_tx and 32 cp.async arrivals).
// Rows of a partial last stage are zeroed, so that P = 0 times them is 0, never NaN.
#pragma once

#include <cstdint>

#include "kernels/common/async_pipe.cuh"
#include "kernels/common/gather.cuh"
#include "kernels/dsa_decode/common/row_ring.h"

namespace mlakit::dsa_ring {

// Arrivals that complete one phase of a full barrier.
// Every lane arrives after its own stores into the stage (the zeroed tail rows), so that each
// store is ordered before the phase by its own thread's release.
template <Gather G>
constexpr uint32_t kFullArrivals = G == Gather::kHybrid ? 33u : 32u;

// Where the producer reads rows: base pointers, slot strides in bf16 elements, and the L2
// policy of the reads (rows are read once: kernels::L2Evict::kFirst).
struct RowSource {
  const uint16_t* ckv;
  const uint16_t* kpe;
  int64_t ckv_stride;
  int64_t kpe_stride;
  uint64_t policy;
};

// Warp-wide: one row by 16-byte cp.async (zeros when not valid).
__device__ __forceinline__ void cp_async_row(uint16_t* dst, const uint16_t* ckv, const uint16_t* kpe,
                                             bool valid, uint64_t policy) {
  const int lane = threadIdx.x % 32;
  kernels::cp_async_16_hint(dst + lane * 8, ckv + lane * 8, valid, policy);
  kernels::cp_async_16_hint(dst + kDimV / 2 + lane * 8, ckv + kDimV / 2 + lane * 8, valid, policy);
  if (lane < kDimR / 8) kernels::cp_async_16_hint(dst + kDimV + lane * 8, kpe + lane * 8, valid, policy);
}
static_assert(kDimV / 2 == 32 * 8, "two 512-byte warp copies cover one ckv row");

// Warp-wide: the kpe parts of rows [0, kStageRows) by cp.async, four rows per instruction
// (lane L: 16-byte chunk L % 8 of row r + L / 8); rows >= rows get zeros.
__device__ __forceinline__ void cp_async_kpe(uint16_t* stage, const RowSource& src, const int32_t* slots,
                                             int rows) {
  const int lane = threadIdx.x % 32;
  for (int r = lane / 8; r < kStageRows; r += 4) {
    const bool valid = r < rows;
    const int64_t slot = valid ? slots[r] : 0;
    kernels::cp_async_16_hint(stage + r * kKvPitch + kDimV + (lane % 8) * 8,
                              src.kpe + slot * src.kpe_stride + (lane % 8) * 8, valid, src.policy);
  }
}

// Zeroes the ckv parts of rows [rows, kStageRows) with the warp's 16-byte stores, then orders
// them before later bulk copies into the same bytes.
__device__ __forceinline__ void zero_tail_ckv(uint16_t* stage, int rows, bool with_kpe) {
  const int chunks = (with_kpe ? kDimK : kDimV) / 8;  // 16-byte chunks per row
  const int lane = threadIdx.x % 32;
  for (int i = rows * chunks + lane; i < kStageRows * chunks; i += 32) {
    const int r = i / chunks, c = i % chunks;
    *reinterpret_cast<uint4*>(stage + r * kKvPitch + c * 8) = make_uint4(0, 0, 0, 0);
  }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// Fills stage buffer `dst` with the `rows` slots starting at `slots`, completing `full`.
template <Gather G>
__device__ __forceinline__ void fill_stage(const RowSource& src, const int32_t* slots, int rows,
                                           uint16_t* dst, uint64_t* full) {
  const int lane = threadIdx.x % 32;
  if constexpr (G == Gather::kCpAsync) {
    for (int r = 0; r < kStageRows; ++r) {
      const bool valid = r < rows;
      const int64_t slot = valid ? slots[r] : 0;
      cp_async_row(dst + r * kKvPitch, src.ckv + slot * src.ckv_stride, src.kpe + slot * src.kpe_stride, valid,
                   src.policy);
    }
    kernels::cp_async_arrive_on(full);
  } else {
    constexpr bool kBulkKpe = G == Gather::kBulk;
    if (rows < kStageRows) zero_tail_ckv(dst, rows, kBulkKpe);
    __syncwarp();  // the zeros are ordered before lane 0's release-arrive below
    const uint32_t bytes = uint32_t(rows) * (kBulkKpe ? kRowBytes : kCkvBytes);
    if (lane == 0) kernels::mbar_arrive_expect_tx(full, bytes);
    else if constexpr (kBulkKpe) kernels::mbar_arrive(full);
    if (lane < rows) {
      const int64_t slot = slots[lane];
      kernels::bulk_copy_g2s(dst + lane * kKvPitch, src.ckv + slot * src.ckv_stride, kCkvBytes, full, src.policy);
      if constexpr (kBulkKpe)
        kernels::bulk_copy_g2s(dst + lane * kKvPitch + kDimV, src.kpe + slot * src.kpe_stride, kKpeBytes, full,
                               src.policy);
    }
    if constexpr (!kBulkKpe) {
      cp_async_kpe(dst, src, slots, rows);
      kernels::cp_async_arrive_on(full);
    }
  }
}
static_assert(kStageRows == 32, "the bulk path gives every lane of a producer warp one row");

// Producer warp `pw` of `Producers`: stages pw, pw + Producers, ... of the CTA's `count` slots.
template <Gather G, int Stages, int Producers>
__device__ void produce_rows(const RowSource& src, const int32_t* slots, int count, uint16_t* ring,
                             uint64_t* full, uint64_t* empty, int pw) {
  static_assert(Stages % Producers == 0, "each ring buffer must belong to one producer warp");
  const int num_stages = (count + kStageRows - 1) / kStageRows;
  for (int i = pw; i < num_stages; i += Producers) {
    const int b = i % Stages;
    kernels::mbar_wait(&empty[b], ((i / Stages) & 1) ^ 1);
    const int rows = min(kStageRows, count - i * kStageRows);
    fill_stage<G>(src, slots + i * kStageRows, rows, ring + b * kStageElems, &full[b]);
  }
}

// Q of one token (heads x (512 | 64)) into rows of pitch kKvPitch by one warp's 16-byte
// cp.async (normal L2 priority: every CTA of the token reads it). Issues the copies only: the
// caller tracks them (cp_async_arrive_on or cp_async_wait).
__device__ inline void load_query(const uint16_t* q_nope, int64_t q_nope_stride_h, const uint16_t* q_pe,
                                  int64_t q_pe_stride_h, int heads, uint16_t* dst) {
  const uint64_t policy = kernels::l2_policy(kernels::L2Evict::kNormal);
  for (int h = 0; h < heads; ++h)
    cp_async_row(dst + h * kKvPitch, q_nope + h * q_nope_stride_h, q_pe + h * q_pe_stride_h, true, policy);
}

}  // namespace mlakit::dsa_ring
