// The producer side of the gathered-row ring: Producers warps walk a CTA's compacted slots in
// stages of kStageRows rows (stage i by producer warp i % Producers) and fill a Stages-deep ring
// in shared memory, each stage guarded by two mbarriers (full: the rows arrived; empty: the
// consumers are done with the stage).
//
// How a row (ckv 1024 B | kpe 128 B -> one 1168-byte smem row) moves, the Gather argument:
//   kBulk     lane r issues two cp.async.bulk copies for row r; the full barrier counts their
//             bytes (lane 0 raises the count first; 32 arrivals per phase, one per lane).
//   kCpAsync  the warp moves the stage row after row with 16-byte cp.async (lane L: chunks L and
//             L + 32 of ckv, L < 8: chunk L of kpe); each lane's cp.async.mbarrier.arrive
//             completes the phase (32 arrivals).
//   kHybrid   lane r bulk-copies the ckv part of row r; the kpe parts of the valid rows move by
//             cp.async, four rows per warp instruction (33 arrivals: lane 0's and 32 cp.async
//             arrivals).
// The rows past a partial last stage's valid ones are left as they are (the cp.async path
// zero-fills them): the consumers' P V reads a zero row in their place (h16::Tile::v_row), and
// the softmax drops their columns of S by a select.
#pragma once

#include <cstdint>

#include "kernels/common/async_pipe.cuh"
#include "kernels/common/gather.cuh"
#include "kernels/common/row_copy.cuh"
#include "kernels/common/ring.cuh"
#include "kernels/common/timeline.cuh"
#include "kernels/dsa_decode/common/row_ring.h"
#include "mlakit/dsa.h"

namespace mlakit::dsa_ring {

using kernels::cp_async_row;
using kernels::load_query;

// Arrivals that complete one phase of a full barrier.
// A stage is filled by kWarpsPerStage<Producers> warps together (each its share of the rows, each
// arriving as one warp does): two with four producer warps, so that the rows of a stage are
// requested in half the time (a warp's lanes issue their rows' bulk copies one after another, so
// the issue, not the copy, sets when a stage is requested), one otherwise.
template <int Producers>
constexpr int kWarpsPerStage = Producers == 4 ? 2 : 1;
template <Gather G, int Producers = 1>
constexpr uint32_t kFullArrivals = (G == Gather::kHybrid ? 33u : 32u) * kWarpsPerStage<Producers>;

// Where the producer reads rows: base pointers, slot strides in bf16 elements, and the L2
// policy of the reads (rows are read once: kernels::L2Evict::kFirst).
struct RowSource {
  const uint16_t* ckv;
  const uint16_t* kpe;
  int64_t ckv_stride;
  int64_t kpe_stride;
  uint64_t policy;
};

// The bf16 caches of `x` as the producers read them (each row once: evict_first).
__device__ __forceinline__ RowSource row_source(const DsaTensors& x) {
  return {static_cast<const uint16_t*>(x.ckv_cache), static_cast<const uint16_t*>(x.kpe_cache), x.ckv_stride_slot,
          x.kpe_stride_slot, kernels::l2_policy(kernels::L2Evict::kFirst)};
}

// Warp-wide: the kpe parts of the valid rows among [r0, r1) by cp.async, four rows per
// instruction (lane L: 16-byte chunk L % 8 of row r + L / 8). The kpe parts of rows >= rows are
// left as they are: only QK reads them, and the softmax drops those columns by a select. The
// loop keeps its fixed trip count (a bound of min(r1, rows), known only at run time, was slower).
__device__ __forceinline__ void cp_async_kpe(uint16_t* stage, const RowSource& src, const int32_t* slots,
                                             int rows, int r0 = 0, int r1 = kStageRows) {
  const int lane = threadIdx.x % 32;
  for (int r = r0 + lane / 8; r < r1; r += 4)
    if (r < rows)
      kernels::cp_async_16_hint(stage + r * kKvPitch + kDimV + (lane % 8) * 8,
                                src.kpe + int64_t(slots[r]) * src.kpe_stride + (lane % 8) * 8, true, src.policy);
}

// Fills rows [r0, r1) of stage buffer `dst` (the `rows` slots starting at `slots` are the stage's
// valid rows), arriving on `full` as one warp: the whole stage with one warp per stage, half of it
// with two.
template <Gather G>
__device__ __forceinline__ void fill_stage(const RowSource& src, const int32_t* slots, int rows,
                                           uint16_t* dst, uint64_t* full, int r0 = 0, int r1 = kStageRows) {
  const int lane = threadIdx.x % 32;
  if constexpr (G == Gather::kCpAsync) {
    for (int r = r0; r < r1; ++r) {
      const bool valid = r < rows;
      const int64_t slot = valid ? slots[r] : 0;
      cp_async_row(dst + r * kKvPitch, src.ckv + slot * src.ckv_stride, src.kpe + slot * src.kpe_stride, valid,
                   src.policy);
    }
    kernels::cp_async_arrive_on(full);
  } else {
    constexpr bool kBulkKpe = G == Gather::kBulk;
    const int own = max(0, min(rows, r1) - r0);  // this warp's valid rows: r0, r0 + 1, ...
    const uint32_t bytes = uint32_t(own) * (kBulkKpe ? kRowBytes : kCkvBytes);
    if (lane == 0) kernels::mbar_expect_tx(full, bytes);  // before any copy completes; arrivals below
    __syncwarp();
    if (lane < own) {
      const int r = r0 + lane;
      const int64_t slot = slots[r];
      kernels::bulk_copy_g2s(dst + r * kKvPitch, src.ckv + slot * src.ckv_stride, kCkvBytes, full, src.policy);
      if constexpr (kBulkKpe)
        kernels::bulk_copy_g2s(dst + r * kKvPitch + kDimV, src.kpe + slot * src.kpe_stride, kKpeBytes, full,
                               src.policy);
    }
    if constexpr (!kBulkKpe) cp_async_kpe(dst, src, slots, rows, r0, r1);
    // No zeros for the rows past the valid ones (P V reads a zero row in their place; writing them
    // here put those stores on a short row's critical path).
    if (lane == 0 || kBulkKpe) kernels::mbar_arrive(full);
    if constexpr (!kBulkKpe) kernels::cp_async_arrive_on(full);
  }
}
static_assert(kStageRows == 32, "the bulk path gives every lane of a producer warp one row");

// One stage of a producer warp's share of the ring (for_each_own_stage).
struct OwnStage {
  int index;   // stage i of the CTA's slots: rows [32 i, 32 i + rows)
  int buffer;  // its ring buffer, i % Stages
  int rows;    // its valid rows, 1..32
  int r0, r1;  // the rows this warp fills
  bool last;   // the CTA's last stage
};

// Producer warp `pw` of `Producers` over the CTA's `count` slots. With P = kWarpsPerStage warps
// per stage, warps pw and its P - 1 neighbours own stages pw / P, pw / P + Producers / P, ..., and
// warp pw fills rows [(pw % P) x 32 / P, + 32 / P) of each (with P = 1: stages pw, pw + Producers,
// ..., whole). Waits for each stage's buffer to be free, then calls fill(OwnStage).
template <int Stages, int Producers, class Fill>
__device__ __forceinline__ void for_each_own_stage(int count, uint64_t* empty, int pw, Fill&& fill) {
  constexpr int kPer = kWarpsPerStage<Producers>, kOwners = Producers / kPer, kShare = kStageRows / kPer;
  static_assert(Stages % kOwners == 0, "each ring buffer must belong to one producer warp (or pair)");
  const int num_stages = (count + kStageRows - 1) / kStageRows;
  const int r0 = (pw % kPer) * kShare;
  for (kernels::Ring<Stages> stage{pw / kPer}; stage.use < num_stages; stage += kOwners) {
    stage.wait_empty(empty);
    const int i = stage.use;
    fill(OwnStage{i, stage.buffer(), min(kStageRows, count - i * kStageRows), r0, r0 + kShare, i == num_stages - 1});
  }
}

// The bf16 ring's producer warp `pw`: its stages (for_each_own_stage) filled by fill_stage.
template <Gather G, int Stages, int Producers>
__device__ void produce_rows(const RowSource& src, const int32_t* slots, int count, uint16_t* ring,
                             uint64_t* full, uint64_t* empty, int pw) {
  for_each_own_stage<Stages, Producers>(count, empty, pw, [&](const OwnStage& st) {
    fill_stage<G>(src, slots + st.index * kStageRows, st.rows, ring + st.buffer * kStageElems, &full[st.buffer],
                  st.r0, st.r1);
  });
}

}  // namespace mlakit::dsa_ring
