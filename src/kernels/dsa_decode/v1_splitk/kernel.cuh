// DSA sparse decode v1: split-K over the top-k list, then a parallel log-sum-exp merge.
//
// Algorithm: CTA (t, s) compacts the valid slots of its slice of sparse_indices[t], gathers their
// 576-wide rows (ckv | kpe) tile by tile with 16-byte cp.async into a Stages-deep ring, computes
// S = Q K^T for all 16 heads with bf16 m16n8k16 MMAs (heads = M), runs a base-2 online softmax and
// accumulates O = P V in fp32 registers. One split writes bf16 output + lse directly; several
// write unnormalised (O, m, l) partials that dsa_merge_kernel combines (grid = tokens x head groups).
//   blockIdx.x = token, blockIdx.y = split; 8 warps, no producer/consumer roles:
//   QK: warp w owns slot group w % 2 (32 slots) over k-quarter w / 2 (144 dims), Q fragments in
//   registers, partial sums meet in smem; softmax: warp w owns slots [8w, 8w+8) of the 64-slot
//   tile; PV: warp w owns dims [64w, 64w+64). Every warp also gathers rows w, w+8, ... .
//   Shared memory (traits.h, SmemPlan): Q 18.7 KB (then reused for partial S) | Stages x 64
//   gathered rows x 1168 B | P 2.3 KB | compacted slots 8 KB | reduction scratch 1 KB.
// Design and measurements: docs/kernels/dsa_decode_v1_splitk.md
#pragma once

#include <cstdint>

#include "kernels/common/gather.cuh"
#include "kernels/common/mma.cuh"
#include "kernels/common/softmax.cuh"
#include "kernels/dsa_decode/v1_splitk/traits.h"

namespace mlakit::dsa_v1 {

using namespace mlakit::kernels;

// Per-thread softmax state of the two rows (heads) a lane holds: g = lane / 4 and g + 8.
struct RowState {
  float m[2] = {-INFINITY, -INFINITY};  // running max of x = s * log2(e), same in every thread
  float l[2] = {0.f, 0.f};              // this thread's share of sum 2^(x - m)
};

// Writes the valid slots of sparse_indices[t, begin : begin + len) densely into smem, in order.
// Padding (-1) and out-of-range values are dropped. Returns the count; ends with a barrier.
template <class Smem>
__device__ int compact_valid_slots(const Params& p, Smem& s, int t, int begin, int len) {
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int32_t* row = p.io.sparse_indices + int64_t(t) * p.io.indices_stride_t + begin;
  int32_t local[kIdxPerThread];
  int count = 0;
#pragma unroll
  for (int j = 0; j < kIdxPerThread; ++j) {
    const int pos = tid * kIdxPerThread + j;
    int32_t v = pos < len ? __ldg(row + pos) : -1;
    if (v < 0 || v >= p.num_slots) v = -1;
    local[j] = v;
    count += v >= 0;
  }
  int inclusive = count;  // warp-inclusive scan of the counts
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const int up = __shfl_up_sync(0xffffffffu, inclusive, d);
    if (lane >= d) inclusive += up;
  }
  if (lane == 31) s.warp_count[warp] = inclusive;
  __syncthreads();
  int offset = inclusive - count, total = 0;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    const int c = s.warp_count[w];
    offset += w < warp ? c : 0;
    total += c;
  }
#pragma unroll
  for (int j = 0; j < kIdxPerThread; ++j)
    if (local[j] >= 0) s.slots[offset++] = local[j];
  __syncthreads();
  return total;
}

// Copies one 576-wide row (512 | 64, two tensors) into smem with the lanes of one warp: lane L
// moves 16-byte chunks L and L + 32 of the 1 KB latent and, for L < 8, chunk L of the rope part.
// Each warp instruction covers 512 contiguous bytes.
__device__ __forceinline__ void copy_row(uint16_t* dst, const uint16_t* nope, const uint16_t* pe,
                                         bool valid) {
  const int lane = threadIdx.x % 32;
  cp_async_16(dst + lane * kChunkElems, nope + lane * kChunkElems, valid);
  cp_async_16(dst + kWarpChunkElems + lane * kChunkElems, nope + kWarpChunkElems + lane * kChunkElems,
              valid);
  if (lane < kDimR / kChunkElems) cp_async_16(dst + kDimV + lane * kChunkElems, pe + lane * kChunkElems, valid);
}

// Q of token t (16 heads x (512 | 64)) into smem, two heads per warp; joins the caller's group.
template <class Smem>
__device__ void load_q(const Params& p, Smem& s, int t) {
  const auto* q_nope = static_cast<const uint16_t*>(p.io.q_nope) + int64_t(t) * p.io.q_nope_stride_t;
  const auto* q_pe = static_cast<const uint16_t*>(p.io.q_pe) + int64_t(t) * p.io.q_pe_stride_t;
  for (int h = threadIdx.x / 32; h < kHeads; h += kWarps)
    copy_row(s.q + h * kKvPitch, q_nope + h * p.io.q_nope_stride_h, q_pe + h * p.io.q_pe_stride_h, true);
}

// Gathers the rows of compacted slots [tile * 64, tile * 64 + 64) into ring stage `dst`, warp w
// taking rows w, w + 8, ...; rows past n_valid are zero-filled (their P is 0, and 0 * garbage
// could be NaN).
__device__ void gather_rows(const Params& p, const int32_t* slots, int tile, int n_valid,
                            uint16_t* dst) {
  const auto* ckv = static_cast<const uint16_t*>(p.io.ckv_cache);
  const auto* kpe = static_cast<const uint16_t*>(p.io.kpe_cache);
  const int row0 = tile * kBlockN;
#pragma unroll
  for (int r = threadIdx.x / 32; r < kBlockN; r += kWarps) {
    const bool valid = row0 + r < n_valid;
    const int64_t slot = valid ? slots[row0 + r] : 0;
    copy_row(dst + r * kKvPitch, ckv + slot * p.io.ckv_stride_slot, kpe + slot * p.io.kpe_stride_slot, valid);
  }
}

// This warp's Q fragments (A operands) for its k-quarter: 9 k16 steps x 4 registers, loaded once.
__device__ void load_q_fragments(const uint16_t* sq, uint32_t (&qa)[kQkSteps][kAFragRegs]) {
  const int lane = threadIdx.x % 32, quarter = threadIdx.x / 32 / kQkGroups;
  const uint16_t* a_row = sq + (lane % 16) * kKvPitch + quarter * kQkSteps * 16 + (lane / 16) * 8;
#pragma unroll
  for (int k = 0; k < kQkSteps; ++k) ldmatrix_x4(a_row + k * 16, qa[k]);
}

// Partial S[16 x 32] = Q K^T over this warp's k-quarter for its 32-slot group, stored to
// s_part[quarter]. Four n8 tiles give four independent MMA chains of 9 steps.
template <class Smem>
__device__ void qk_partial(Smem& s, const uint32_t (&qa)[kQkSteps][kAFragRegs], const uint16_t* kv) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int group = warp % kQkGroups, quarter = warp / kQkGroups;
  const int k0 = quarter * kQkSteps * 16;
  float acc[kQkTilesN][kAccRegs] = {};
#pragma unroll
  for (int j = 0; j < kQkTilesN; ++j) {
    const uint16_t* b_row = kv + (group * kQkGroupSlots + j * kMmaN + lane % 8) * kKvPitch + k0 + (lane / 8) * 8;
#pragma unroll
    for (int k = 0; k + 1 < kQkSteps; k += 2) {  // two k16 steps per ldmatrix.x4
      uint32_t b[4];
      ldmatrix_x4(b_row + k * 16, b);
      mma_bf16_16816(acc[j], qa[k], b[0], b[1]);
      mma_bf16_16816(acc[j], qa[k + 1], b[2], b[3]);
    }
    uint32_t b0, b1;  // the odd ninth step
    ldmatrix_x2(kv + (group * kQkGroupSlots + j * kMmaN + lane % 8) * kKvPitch + k0 + (kQkSteps - 1) * 16 +
                    ((lane / 8) % 2) * 8, b0, b1);
    mma_bf16_16816(acc[j], qa[kQkSteps - 1], b0, b1);
  }
  const int g = lane / 4;
  float* out = s.s_part[quarter];
#pragma unroll
  for (int j = 0; j < kQkTilesN; ++j) {
    const int col = group * kQkGroupSlots + j * kMmaN + 2 * (lane % 4);
    *reinterpret_cast<float2*>(out + g * kSPitch + col) = make_float2(acc[j][0], acc[j][1]);
    *reinterpret_cast<float2*>(out + (g + 8) * kSPitch + col) = make_float2(acc[j][2], acc[j][3]);
  }
}

// Base-2 online softmax over one tile: sums the k-quarter partials of S (fixed order, so runs
// are bitwise reproducible) for this warp's 8 slots, masks slots past n_valid, updates the running
// max across all warps (via smem), writes P = 2^(x - m) as bf16 for the PV MMA and returns the
// factor that rescales the accumulators of each of the lane's two rows. Ends with a barrier.
template <class Smem>
__device__ void online_softmax(Smem& s, int tile, int n_valid, float scale_log2, RowState& st,
                               float (&alpha)[2]) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4;
  const int col = warp * kSoftmaxSlots + 2 * (lane % 4);
  float s_frag[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
  for (int q = 0; q < kQkQuarters; ++q) {
    const float2 top = *reinterpret_cast<const float2*>(s.s_part[q] + g * kSPitch + col);
    const float2 bottom = *reinterpret_cast<const float2*>(s.s_part[q] + (g + 8) * kSPitch + col);
    s_frag[0] += top.x, s_frag[1] += top.y, s_frag[2] += bottom.x, s_frag[3] += bottom.y;
  }
  const bool v0 = tile * kBlockN + col < n_valid, v1 = tile * kBlockN + col + 1 < n_valid;
  float x[4] = {v0 ? s_frag[0] * scale_log2 : -INFINITY, v1 ? s_frag[1] * scale_log2 : -INFINITY,
                v0 ? s_frag[2] * scale_log2 : -INFINITY, v1 ? s_frag[3] * scale_log2 : -INFINITY};
  const float mx0 = quad_max(fmaxf(x[0], x[1])), mx1 = quad_max(fmaxf(x[2], x[3]));
  if (lane % 4 == 0) {
    s.red_max[warp][g] = mx0;
    s.red_max[warp][g + 8] = mx1;
  }
  __syncthreads();
  float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    tile_max[0] = fmaxf(tile_max[0], s.red_max[w][g]);
    tile_max[1] = fmaxf(tile_max[1], s.red_max[w][g + 8]);
  }
  float pr[4];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float m_new = fmaxf(st.m[r], tile_max[r]);
    const float origin = softmax_origin(m_new);
    alpha[r] = fast_exp2(st.m[r] - origin);
    pr[2 * r] = fast_exp2(x[2 * r] - origin);
    pr[2 * r + 1] = fast_exp2(x[2 * r + 1] - origin);
    st.l[r] = st.l[r] * alpha[r] + pr[2 * r] + pr[2 * r + 1];
    st.m[r] = m_new;
  }
  auto* p_rows = reinterpret_cast<uint32_t*>(s.p);
  p_rows[(g * kPPitch + col) / 2] = pack_bf16x2(pr[0], pr[1]);
  p_rows[((g + 8) * kPPitch + col) / 2] = pack_bf16x2(pr[2], pr[3]);
  __syncthreads();
}

// O[16 x 64 dims of this warp] = alpha * O + P V over the 64 slots of the tile.
__device__ void pv_mma(const uint16_t* sp, const uint16_t* kv, const float (&alpha)[2],
                       float (&o)[kPvTilesN][kAccRegs]) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int j = 0; j < kPvTilesN; ++j) {
    o[j][0] *= alpha[0];
    o[j][1] *= alpha[0];
    o[j][2] *= alpha[1];
    o[j][3] *= alpha[1];
  }
  const uint16_t* a_row = sp + (lane % 16) * kPPitch + (lane / 16) * 8;
  const uint16_t* b_row = kv + (lane % 16) * kKvPitch + warp * kPvDims + (lane / 16) * 8;
#pragma unroll
  for (int k = 0; k < kBlockN / 16; ++k) {
    uint32_t a[4];
    ldmatrix_x4(a_row + k * 16, a);
#pragma unroll
    for (int pair = 0; pair < kPvTilesN / 2; ++pair) {
      uint32_t b[4];
      ldmatrix_x4_trans(b_row + k * 16 * kKvPitch + pair * 16, b);
      mma_bf16_16816(o[2 * pair], a, b[0], b[1]);
      mma_bf16_16816(o[2 * pair + 1], a, b[2], b[3]);
    }
  }
}

// Sums each row's l over the quad and the 8 warps; every thread gets the totals of its rows.
template <class Smem>
__device__ void reduce_row_sums(Smem& s, const RowState& st, float (&l_total)[2]) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4;
  const float l0 = quad_sum(st.l[0]), l1 = quad_sum(st.l[1]);
  if (lane % 4 == 0) {
    s.red_sum[warp][g] = l0;
    s.red_sum[warp][g + 8] = l1;
  }
  __syncthreads();
  l_total[0] = l_total[1] = 0.f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    l_total[0] += s.red_sum[w][g];
    l_total[1] += s.red_sum[w][g + 8];
  }
}

// One split: final bf16 output and lse. Several: the unnormalised partial (O, m, l).
__device__ void store_result(const Params& p, int t, int split, const RowState& st,
                             const float (&l_total)[2], const float (&o)[kPvTilesN][kAccRegs]) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4;
  const int col = warp * kPvDims + 2 * (lane % 4);
  if (p.num_splits == 1) {
    auto* out = static_cast<uint32_t*>(p.io.output);
    // kHeads = H: row g is head g.
    const float inv[2] = {1.f / (l_total[0] + sink_share(p.io.attn_sink, [&] { return g; }, st.m[0])),
                          1.f / (l_total[1] + sink_share(p.io.attn_sink, [&] { return g + 8; }, st.m[1]))};
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int64_t base = (int64_t(t) * kHeads + g + 8 * r) * kDimV + col;
#pragma unroll
      for (int j = 0; j < kPvTilesN; ++j)
        out[(base + j * kMmaN) / 2] = pack_bf16x2(o[j][2 * r] * inv[r], o[j][2 * r + 1] * inv[r]);
    }
    if (warp == 0 && lane % 4 == 0) {
      p.io.lse[t * kHeads + g] = st.m[0] + log2f(l_total[0]);
      p.io.lse[t * kHeads + g + 8] = st.m[1] + log2f(l_total[1]);
    }
    return;
  }
  const int64_t row0 = (int64_t(t) * p.num_splits + split) * kHeads;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float* dst = p.part_o + (row0 + g + 8 * r) * kDimV + col;
#pragma unroll
    for (int j = 0; j < kPvTilesN; ++j)
      *reinterpret_cast<float2*>(dst + j * kMmaN) = make_float2(o[j][2 * r], o[j][2 * r + 1]);
  }
  if (warp == 0 && lane % 4 == 0) {
    p.part_m[row0 + g] = st.m[0];
    p.part_m[row0 + g + 8] = st.m[1];
    p.part_l[row0 + g] = l_total[0];
    p.part_l[row0 + g + 8] = l_total[1];
  }
}

// A split without a valid slot: output 0 and lse -inf, or an empty partial (l = 0, O unread).
__device__ void store_empty(const Params& p, int t, int split) {
  if (p.num_splits == 1) {
    auto* out = reinterpret_cast<uint4*>(static_cast<uint16_t*>(p.io.output) + int64_t(t) * kHeads * kDimV);
    for (int i = threadIdx.x; i < kHeads * kDimV / kChunkElems; i += kThreads) out[i] = make_uint4(0, 0, 0, 0);
    if (threadIdx.x < kHeads) p.io.lse[t * kHeads + threadIdx.x] = -INFINITY;
    return;
  }
  if (threadIdx.x < kHeads) {
    const int64_t row = (int64_t(t) * p.num_splits + split) * kHeads + threadIdx.x;
    p.part_m[row] = -INFINITY;
    p.part_l[row] = 0.f;
  }
}

template <int Stages>
__global__ void __launch_bounds__(kThreads, min_ctas_per_sm(Stages))
    dsa_splitk_kernel(const __grid_constant__ Params p) {
  extern __shared__ __align__(128) uint8_t smem_raw[];
  auto& s = *reinterpret_cast<SmemPlan<Stages>*>(smem_raw);
  const int t = blockIdx.x, split = blockIdx.y;
  // Let the merge kernel's launch overlap this grid; it waits for our completion before reading.
  asm volatile("griddepcontrol.launch_dependents;");

  load_q(p, s, t);
  const int begin = split * p.split_len;
  const int n_valid = compact_valid_slots(p, s, t, begin, min(p.split_len, p.topk - begin));
  if (n_valid == 0) {
    cp_async_wait<0>();
    store_empty(p, t, split);
    return;
  }
  const int num_tiles = (n_valid + kBlockN - 1) / kBlockN;
#pragma unroll
  for (int i = 0; i < Stages; ++i) {  // prologue: fill the ring (Q rides in group 0)
    if (i < num_tiles) gather_rows(p, s.slots, i, n_valid, s.kv[i]);
    cp_async_commit();
  }
  RowState st;
  float o[kPvTilesN][kAccRegs] = {};
  uint32_t qa[kQkSteps][kAFragRegs];
  for (int tile = 0; tile < num_tiles; ++tile) {
    cp_async_wait<Stages - 1>();
    __syncthreads();
    if (tile == 0) {  // Q arrived with tile 0; its smem becomes the partial-S buffer afterwards
      load_q_fragments(s.q, qa);
      __syncthreads();
    }
    const uint16_t* kv = s.kv[tile % Stages];
    float alpha[2];
    qk_partial(s, qa, kv);
    __syncthreads();  // all four k-quarters of S are in smem
    online_softmax(s, tile, n_valid, p.scale_log2, st, alpha);
    pv_mma(s.p, kv, alpha, o);
    __syncthreads();  // stage and P are free again
    if (tile + Stages < num_tiles) gather_rows(p, s.slots, tile + Stages, n_valid, s.kv[tile % Stages]);
    cp_async_commit();
  }
  float l_total[2];
  reduce_row_sums(s, st, l_total);
  store_result(p, t, split, st, l_total, o);
}

// Merges the splits of token t for heads [y * hpg, (y + 1) * hpg): each thread owns 8 dims of one
// head; O = sum_s 2^(m_s - M) O_s / sum_s 2^(m_s - M) l_s, lse = M + log2(sum ...).
__global__ void __launch_bounds__(kMergeMaxThreads) dsa_merge_kernel(const __grid_constant__ Params p,
                                                                     int heads_per_group) {
  asm volatile("griddepcontrol.wait;" ::: "memory");  // the split kernel has finished
  const int t = blockIdx.x, h = blockIdx.y * heads_per_group + threadIdx.x / kMergeThreadsPerHead;
  const int d0 = (threadIdx.x % kMergeThreadsPerHead) * kMergeDimsPerThread;
  const int64_t row0 = int64_t(t) * p.num_splits * kHeads + h;  // (t, split 0, h)
  float m_max = -INFINITY;
  for (int sp = 0; sp < p.num_splits; ++sp)
    if (p.part_l[row0 + sp * kHeads] > 0.f) m_max = fmaxf(m_max, p.part_m[row0 + sp * kHeads]);
  float acc[kMergeDimsPerThread] = {}, l_sum = 0.f;
  for (int sp = 0; sp < p.num_splits; ++sp) {
    const float l = p.part_l[row0 + sp * kHeads];
    if (!(l > 0.f)) continue;  // empty split: its O was never written
    const float w = exp2f(p.part_m[row0 + sp * kHeads] - m_max);
    const float4* src = reinterpret_cast<const float4*>(p.part_o + (row0 + sp * kHeads) * kDimV + d0);
    const float4 a = src[0], b = src[1];
    l_sum += w * l;
    acc[0] += w * a.x, acc[1] += w * a.y, acc[2] += w * a.z, acc[3] += w * a.w;
    acc[4] += w * b.x, acc[5] += w * b.y, acc[6] += w * b.z, acc[7] += w * b.w;
  }
  *reinterpret_cast<uint4*>(static_cast<uint16_t*>(p.io.output) + (int64_t(t) * kHeads + h) * kDimV + d0) =
      pack_bf16x8(acc, l_sum > 0.f ? 1.f / (l_sum + sink_share(p.io.attn_sink, [&] { return h; }, m_max)) : 0.f);
  if (threadIdx.x % kMergeThreadsPerHead == 0)
    p.io.lse[t * kHeads + h] = l_sum > 0.f ? m_max + log2f(l_sum) : -INFINITY;
}

}  // namespace mlakit::dsa_v1
