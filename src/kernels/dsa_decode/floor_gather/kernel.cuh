// The gather floor (traits.h): grid (max_splits, T); every CTA slices its token's row exactly as
// v2_fused does, warps 4.. fill the ring, warps 0-3 wait for each stage and release it unread.
#pragma once

#include "kernels/dsa_decode/common/gather_ring.cuh"
#include "kernels/dsa_decode/common/row_slice.cuh"
#include "kernels/dsa_decode/floor_gather/traits.h"

namespace mlakit::dsa_floor {

template <Gather G, int Stages, int Producers>
__global__ void __launch_bounds__(kThreadsFor<Producers>, kCtasPerSm)
    dsa_floor_kernel(const __grid_constant__ Params p) {
  extern __shared__ __align__(128) uint8_t smem_raw[];
  auto& s = *reinterpret_cast<SmemPlan<Stages>*>(smem_raw);
  const int split = blockIdx.x, t = blockIdx.y, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    for (auto& b : s.full) kernels::mbar_init(&b, kFullArrivals<G, Producers>);
    for (auto& b : s.empty) kernels::mbar_init(&b, kConsumerWarps);
    kernels::mbar_fence_init();
  }
  const RowSlice rs = slice_row<kThreadsFor<Producers>, kIdxPerThread>(p.io.sparse_indices + t * p.io.indices_stride_t, p.topk,
                                                        p.num_slots, split, p.max_splits, p.min_rows,
                                                        s.slots, s.warp_count);
  if (rs.count == 0) return;
  if (threadIdx.x / 32 >= kConsumerWarps) {
    produce_rows<G, Stages, Producers>(row_source(p.io), s.slots, rs.count, &s.ring[0][0], s.full, s.empty,
                                       threadIdx.x / 32 - kConsumerWarps);
    return;
  }
  const int num_stages = (rs.count + kStageRows - 1) / kStageRows;
  for (kernels::Ring<Stages> stage; stage.use < num_stages; ++stage) {
    stage.wait_full(s.full);
    __syncwarp();
    if (lane == 0) stage.release(s.empty);
  }
}

// The register floor: 8 warps per CTA, warp w loads rows w, w + 8, ... of the CTA's slice with
// 16-byte non-caching loads, kLdgRows rows (18 loads per lane) in flight, and folds them into one
// word that is stored only if it equals a value no input produces (keeps the loads alive).
__global__ void __launch_bounds__(kLdgThreads) dsa_floor_ldg_kernel(const __grid_constant__ Params p) {
  __shared__ int32_t slots[kLdgMaxTopk];
  __shared__ int32_t warp_count[kLdgThreads / 32];
  const int split = blockIdx.x, t = blockIdx.y, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const RowSlice rs = slice_row<kLdgThreads, kLdgIdxPerThread>(p.io.sparse_indices + t * p.io.indices_stride_t,
                                                              p.topk, p.num_slots, split, p.max_splits,
                                                              p.min_rows, slots, warp_count);
  const uint64_t policy = kernels::l2_policy(kernels::L2Evict::kFirst);
  const auto ldg = [policy](const uint4* a) {
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(a), "l"(policy));
    return v;
  };
  const auto* ckv = static_cast<const uint4*>(p.io.ckv_cache);
  const auto* kpe = static_cast<const uint4*>(p.io.kpe_cache);
  uint32_t fold = 0;
  for (int r0 = warp * kLdgRows; r0 < rs.count; r0 += kLdgThreads / 32 * kLdgRows) {
    uint4 v[kLdgRows][3];
#pragma unroll
    for (int u = 0; u < kLdgRows; ++u) {
      const bool valid = r0 + u < rs.count;
      const int64_t slot = valid ? slots[r0 + u] : 0;
      const uint4* row = ckv + slot * p.io.ckv_stride_slot / 8;
      v[u][0] = valid ? ldg(row + lane) : make_uint4(0, 0, 0, 0);
      v[u][1] = valid ? ldg(row + 32 + lane) : make_uint4(0, 0, 0, 0);
      v[u][2] = valid && lane < 8 ? ldg(kpe + slot * p.io.kpe_stride_slot / 8 + lane) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < kLdgRows; ++u)
#pragma unroll
      for (int k = 0; k < 3; ++k) fold ^= v[u][k].x ^ v[u][k].y ^ v[u][k].z ^ v[u][k].w;
  }
  if (fold == 0x7fc0dead) p.io.lse[0] = 0.f;  // never: a NaN payload randn bf16 pairs cannot fold to
}

}  // namespace mlakit::dsa_floor
