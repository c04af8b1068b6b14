// The 16-head consumer warpgroup (4 warps) of dsa_decode v2_fused / v2_fp8 and mla_decode's 16-row
// kernel: ring tiles of 64 gathered rows into the running (O, m, l) of 16 heads with bf16
// m16n8k16 MMAs (heads = M) and a base-2 online softmax; a CTA of 32 heads runs two warpgroups on
// the same tiles, each with its own Q, partial S and P (a `Part` with the members of WgPart,
// consumer_h16.h) and its own named barrier. Per tile: qk_partial (warp w:
// k-quarter w x 64 slots, Q fragments in registers) ->
// partial S in smem -> online_softmax (warp w: slots 16w..16w+15) -> P in smem -> pv_mma (warp w:
// dims 128w..128w+127). Three named barriers per tile order the smem hand-offs.
#pragma once

#include <cstdint>

#include "kernels/common/async_pipe.cuh"
#include "kernels/common/consumer_h16.h"
#include "kernels/common/mma.cuh"
#include "kernels/common/ring.cuh"
#include "kernels/common/softmax.cuh"
#include "kernels/common/timeline.cuh"

namespace mlakit::h16 {

using namespace mlakit::kernels;

// The consumer warpgroup of this thread (0 or 1), its warp within the warpgroup; producer warps
// come after every consumer warpgroup.
__device__ __forceinline__ int consumer_wg() { return threadIdx.x / kConsumerThreads; }
__device__ __forceinline__ int wg_warp() { return (threadIdx.x / 32) % kConsumerWarps; }

// Named barrier of the thread's consumer warpgroup: 1 + its index (0 is the CTA-wide __syncthreads).
constexpr uint32_t kConsumerBarrier = 1;
__device__ __forceinline__ void consumer_sync() {
  named_barrier_sync(kConsumerBarrier + consumer_wg(), kConsumerThreads);
}

// Softmax state of the two rows (heads) a lane holds: g = lane / 4 and g + 8.
struct RowState {
  float m[2] = {-INFINITY, -INFINITY};  // running max of x = s * log2(e), same in every thread
  float l[2] = {0.f, 0.f};              // this thread's share of sum 2^(x - m)
};

// The two ring stages of a tile; a one-stage tile points both at the same stage (its second
// half is masked, never multiplied). The zero row is a constructor argument, not a defaulted
// member: a tile built without one would let P V read V at shared address 0 (a null pointer) for
// the masked slots, where stale bits of another kernel can be NaN (0 x NaN = NaN).
struct Tile {
  static_assert(kTileStages == 2, "row() picks one of two stages");
  const uint16_t* stage[kTileStages];
  int rows;               // valid rows, 1..64
  const uint16_t* zeros;  // a zero row of kDimV dims in shared memory (WgPart::zeros)
  __device__ Tile(const uint16_t* first, const uint16_t* second, int valid_rows, const uint16_t* zero_row)
      : stage{first, second}, rows(valid_rows), zeros(zero_row) {}
  // A select, not an index: a run-time index into `stage` would put the tile in local memory.
  __device__ const uint16_t* row(int slot) const {
    return (slot < kStageRows ? stage[0] : stage[1]) + (slot % kStageRows) * kKvPitch;
  }
  // The row P V reads for `slot`: the zero row past the valid ones (QK reads the stale rows
  // there instead: the softmax drops their columns by a select, so nothing multiplies them).
  __device__ const uint16_t* v_row(int slot) const { return slot < rows ? row(slot) : zeros; }
};

// The warpgroup's zero row, written by its first threads before its first barrier.
template <class Part>
__device__ __forceinline__ void write_zero_row(Part& part) {
  constexpr int kChunks = sizeof(part.zeros) / 16;
  static_assert(kChunks <= kConsumerThreads, "one 16-byte store per thread");
  const int i = threadIdx.x % kConsumerThreads;
  if (i < kChunks) reinterpret_cast<uint4*>(part.zeros)[i] = make_uint4(0u, 0u, 0u, 0u);
}

// This warp's Q fragments (A operands) for its k-quarter: 9 k16 steps x 4 registers, loaded once.
__device__ __forceinline__ void load_q_fragments(const uint16_t* sq, uint32_t (&qa)[kQkSteps][4]) {
  const int lane = threadIdx.x % 32, quarter = wg_warp();
  const uint16_t* a_row = sq + (lane % 16) * kKvPitch + quarter * kQkSteps * 16 + (lane / 16) * 8;
#pragma unroll
  for (int k = 0; k < kQkSteps; ++k) ldmatrix_x4(a_row + k * 16, qa[k]);
}

// Partial S[16 x 8 SlotTiles] = Q K^T over this warp's k-quarter, stored to s_part[quarter].
// Eight n8 tiles (four for a one-stage tile of <= 32 rows) give as many independent MMA chains of
// 9 steps.
template <int SlotTiles = kSlotTiles>
__device__ __forceinline__ void qk_partial(float* s_part, const uint32_t (&qa)[kQkSteps][4], const Tile& tile) {
  const int lane = threadIdx.x % 32, quarter = wg_warp();
  const int k0 = quarter * kQkSteps * 16;
  float acc[SlotTiles][4] = {};
#pragma unroll
  for (int j = 0; j < SlotTiles; ++j) {
    const uint16_t* row = tile.row(j * 8 + lane % 8) + k0;
#pragma unroll
    for (int k = 0; k + 1 < kQkSteps; k += 2) {  // two k16 steps per ldmatrix.x4
      uint32_t b[4];
      ldmatrix_x4(row + k * 16 + (lane / 8) * 8, b);
      mma_bf16_16816(acc[j], qa[k], b[0], b[1]);
      mma_bf16_16816(acc[j], qa[k + 1], b[2], b[3]);
    }
    uint32_t b0, b1;  // the odd ninth step
    ldmatrix_x2(row + (kQkSteps - 1) * 16 + ((lane / 8) % 2) * 8, b0, b1);
    mma_bf16_16816(acc[j], qa[kQkSteps - 1], b0, b1);
  }
  static_assert(kQkSteps % 2 == 1, "the loop above pairs k16 steps and finishes with one more");
  const int g = lane / 4;
  float* out = s_part + quarter * kHeads * kSPitch;
#pragma unroll
  for (int j = 0; j < SlotTiles; ++j) {
    const int col = j * 8 + 2 * (lane % 4);
    *reinterpret_cast<float2*>(out + g * kSPitch + col) = make_float2(acc[j][0], acc[j][1]);
    *reinterpret_cast<float2*>(out + (g + 8) * kSPitch + col) = make_float2(acc[j][2], acc[j][3]);
  }
}

// Base-2 online softmax over one tile of SlotTiles x 8 slots (64; v2_fp8 also runs 32): sums the
// four k-quarter partials of S (fixed order) for this warp's 16 (8) slots, masks slots >= rows,
// updates the running max of every row across the warpgroup, writes P = 2^(x - m) as bf16 and
// returns the rescale factor of each of the lane's two rows. Ends with a consumer barrier.
template <int SlotTiles = kSlotTiles, class Part>
__device__ void online_softmax(Part& s, int rows, float scale_log2, RowState& st, float (&alpha)[2]) {
  const int lane = threadIdx.x % 32, warp = wg_warp(), g = lane / 4;
  static_assert(SlotTiles % kConsumerWarps == 0 && SlotTiles <= kSlotTiles, "whole n8 column tiles per warp");
  constexpr int kTilesPerWarp = SlotTiles / kConsumerWarps;  // two n8 column tiles (one for a 32-slot tile)
  float x[kTilesPerWarp][4];
#pragma unroll
  for (int i = 0; i < kTilesPerWarp; ++i) {
    const int col = (warp * kTilesPerWarp + i) * 8 + 2 * (lane % 4);
    float v[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int q = 0; q < kConsumerWarps; ++q) {
      const float2 top = *reinterpret_cast<const float2*>(s.s_part[q] + g * kSPitch + col);
      const float2 bottom = *reinterpret_cast<const float2*>(s.s_part[q] + (g + 8) * kSPitch + col);
      v[0] += top.x, v[1] += top.y, v[2] += bottom.x, v[3] += bottom.y;
    }
    const bool v0 = col < rows, v1 = col + 1 < rows;
    x[i][0] = v0 ? v[0] * scale_log2 : -INFINITY;
    x[i][1] = v1 ? v[1] * scale_log2 : -INFINITY;
    x[i][2] = v0 ? v[2] * scale_log2 : -INFINITY;
    x[i][3] = v1 ? v[3] * scale_log2 : -INFINITY;
  }
  float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int i = 0; i < kTilesPerWarp; ++i) {
    mx[0] = fmaxf(mx[0], fmaxf(x[i][0], x[i][1]));
    mx[1] = fmaxf(mx[1], fmaxf(x[i][2], x[i][3]));
  }
  mx[0] = quad_max(mx[0]);
  mx[1] = quad_max(mx[1]);
  if (lane % 4 == 0) {
    s.red_max[warp][g] = mx[0];
    s.red_max[warp][g + 8] = mx[1];
  }
  consumer_sync();
  auto* p_words = reinterpret_cast<uint32_t*>(s.p);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float tile_max = -INFINITY;
#pragma unroll
    for (int w = 0; w < kConsumerWarps; ++w) tile_max = fmaxf(tile_max, s.red_max[w][g + 8 * r]);
    const float m_new = fmaxf(st.m[r], tile_max);
    const float origin = softmax_origin(m_new);
    alpha[r] = fast_exp2(st.m[r] - origin);
    float sum = 0.f;
#pragma unroll
    for (int i = 0; i < kTilesPerWarp; ++i) {
      const float p0 = fast_exp2(x[i][2 * r] - origin), p1 = fast_exp2(x[i][2 * r + 1] - origin);
      sum += p0 + p1;
      const int col = (warp * kTilesPerWarp + i) * 8 + 2 * (lane % 4);
      p_words[((g + 8 * r) * kPPitch + col) / 2] = pack_bf16x2(p0, p1);
    }
    st.l[r] = st.l[r] * alpha[r] + sum;
    st.m[r] = m_new;
  }
  consumer_sync();
}

// O *= alpha, row by row: the lane's rows g (accumulators 0, 1) and g + 8 (2, 3) of every n8 tile.
__device__ __forceinline__ void rescale_rows(float (&o)[kOTiles][4], const float (&alpha)[2]) {
#pragma unroll
  for (int j = 0; j < kOTiles; ++j) {
    o[j][0] *= alpha[0];
    o[j][1] *= alpha[0];
    o[j][2] *= alpha[1];
    o[j][3] *= alpha[1];
  }
}

// O[16 x 128 dims of this warp] = alpha * O + P V over the tile's slots (`k_steps` k16 steps).
template <int SlotTiles = kSlotTiles>
__device__ __forceinline__ void pv_mma(const uint16_t* sp, const Tile& tile, const float (&alpha)[2],
                                       float (&o)[kOTiles][4]) {
  const int lane = threadIdx.x % 32, warp = wg_warp();
  rescale_rows(o, alpha);
  const int k_steps = (tile.rows + 15) / 16;
  const uint16_t* a_row = sp + (lane % 16) * kPPitch + (lane / 16) * 8;
#pragma unroll
  for (int k = 0; k < SlotTiles / 2; ++k) {
    if (k >= k_steps) break;
    uint32_t a[4];
    ldmatrix_x4(a_row + k * 16, a);
    const uint16_t* b_row = tile.v_row(k * 16 + lane % 16) + warp * kDimsPerWarp + (lane / 16) * 8;
#pragma unroll
    for (int pair = 0; pair < kOTiles / 2; ++pair) {
      uint32_t b[4];
      ldmatrix_x4_trans(b_row + pair * 16, b);
      mma_bf16_16816(o[2 * pair], a, b[0], b[1]);
      mma_bf16_16816(o[2 * pair + 1], a, b[2], b[3]);
    }
  }
}

// Sums each row's l over the quad and the 4 warps; every thread gets the totals of its rows.
template <class Part>
__device__ void reduce_row_sums(Part& s, const RowState& st, float (&l_total)[2]) {
  const int lane = threadIdx.x % 32, warp = wg_warp(), g = lane / 4;
  const float l0 = quad_sum(st.l[0]), l1 = quad_sum(st.l[1]);
  if (lane % 4 == 0) {
    s.red_sum[warp][g] = l0;
    s.red_sum[warp][g + 8] = l1;
  }
  consumer_sync();
  l_total[0] = l_total[1] = 0.f;
#pragma unroll
  for (int w = 0; w < kConsumerWarps; ++w) {
    l_total[0] += s.red_sum[w][g];
    l_total[1] += s.red_sum[w][g + 8];
  }
}

// The consumer warps' walk over the CTA's `count` slots through a Stages-deep ring of bf16 stages
// (`ring`, guarded by `full` and `empty`): each tile of two consecutive stages is waited for,
// handed to `body`, then given back; every consumer thread arrives on the empty barriers once its
// own reads are done (kConsumerThreads arrivals per phase).
template <int Stages, class Body>
__device__ __forceinline__ void walk_tiles(uint64_t* full, uint64_t* empty, uint16_t (*ring)[kStageElems],
                                           const uint16_t* zeros, int count, Body&& body) {
  const int num_stages = (count + kStageRows - 1) / kStageRows;
  for (int i = 0; i < num_stages; i += kTileStages) {
    const bool two = i + 1 < num_stages;
    const Ring<Stages> first{i}, second{i + 1};
    const int b0 = first.buffer(), b1 = second.buffer();
    first.wait_full(full);
    if (two) second.wait_full(full);
    body(Tile(ring[b0], two ? ring[b1] : ring[b0], min(kTileRows, count - i * kStageRows), zeros));
    first.release(empty);
    if (two) second.release(empty);
  }
}

// The same over the CTA's gather ring (either MMA path), for the warpgroup of `part`.
template <int Stages, class Smem, class Part, class Body>
__device__ __forceinline__ void for_each_tile(Smem& s, const Part& part, int count, Body&& body) {
  walk_tiles<Stages>(s.full, s.empty, s.ring, part.zeros, count, body);
}

// One tile of 8 SlotTiles slots into the running state: QK, online softmax, PV (every kernel built
// on these consumers).
template <int SlotTiles = kSlotTiles, class Part>
__device__ __forceinline__ void decode_tile(Part& s, const uint32_t (&qa)[kQkSteps][4], const Tile& tile,
                                            float scale_log2, RowState& st, float (&o)[kOTiles][4]) {
  qk_partial<SlotTiles>(&s.s_part[0][0], qa, tile);
  consumer_sync();  // all four k-quarters of S are in smem
  float alpha[2];
  online_softmax<SlotTiles>(s, tile.rows, scale_log2, st, alpha);
  pv_mma<SlotTiles>(s.p, tile, alpha, o);
}

// Waits for Q and loads this warp's fragments of it; ends with a consumer barrier, after which
// s_part may overwrite Q.
template <class Smem, class Part>
__device__ __forceinline__ void take_q(Smem& s, Part& part, uint32_t (&qa)[kQkSteps][4]) {
  mbar_wait(&s.q_full, 0);
  load_q_fragments(part.q, qa);
  consumer_sync();
}

// A consumer warpgroup's loop over the CTA's `count` slots (tiles of two ring stages of `s`),
// with its own Q, partial S and P in `part`.
template <int Stages, class Smem, class Part>
__device__ void consume_rows(Smem& s, Part& part, int count, float scale_log2, RowState& st,
                             float (&o)[kOTiles][4]) {
  uint32_t qa[kQkSteps][4];
  write_zero_row(part);  // ordered before every P V by take_q's barrier
  take_q(s, part, qa);
  for_each_tile<Stages>(s, part, count, [&](const Tile& tile) {
    // A one-stage tile (<= 32 rows: short rows, an odd last stage) computes half the columns.
    if (tile.rows <= kStageRows) decode_tile<kSlotTiles / 2>(part, qa, tile, scale_log2, st, o);
    else decode_tile(part, qa, tile, scale_log2, st, o);
  });
}

}  // namespace mlakit::h16
