// Hopper (sm_90) pipeline primitives: shared-memory mbarriers with transaction counts, the 1D
// bulk async copy and the tensor-map (TMA) box copy global -> shared that complete on one of them,
// cp.async completion tracked by an mbarrier, named barriers for a subset of warps, and the
// acquire load of a global flag. Thin wrappers over the PTX instructions (PTX ISA 8.0, "mbarrier",
// "cp.async.bulk", "cp.async.bulk.tensor").
#pragma once

#include <cstdint>

namespace mlakit::kernels {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// One phase completes when `count` arrivals happened and the transaction count is back to 0.
__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count));
}

// Makes barrier initialisation visible to the async proxy (bulk copies) and the other threads;
// follow it with a CTA barrier.
__device__ __forceinline__ void mbar_fence_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}

// Arrives and raises the transaction count by `bytes` that bulk copies will complete.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;"
               ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}

// Raises the transaction count by `bytes` without arriving (the caller arrives later, after
// stores that the phase must publish).
__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes)
               : "memory");
}

// Waits until the phase with parity `parity` has completed (a fresh barrier counts its
// "previous" phase, parity 1, as completed).
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "wait_loop:\n"
      "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_loop;\n"
      "}\n" ::"r"(smem_addr(bar)),
      "r"(parity)
      : "memory");
}

// L2 eviction priority of a load, as a cache-policy operand. Data read once (gathered rows)
// goes in evict_first: it then evicts its own lines, not lines other work still needs or has
// left dirty (whose write-back would cost DRAM bandwidth during the read).
enum class L2Evict { kFirst, kNormal };
__device__ __forceinline__ uint64_t l2_policy(L2Evict e) {
  uint64_t p;
  if (e == L2Evict::kFirst)
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  else
    asm("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;" : "=l"(p));
  return p;
}

// Copies `bytes` (a multiple of 16; both addresses 16-byte aligned) from global to shared
// memory through the copy engine under L2 cache policy `policy`; completes `bytes` transactions
// on `bar`.
__device__ __forceinline__ void bulk_copy_g2s(void* smem_dst, const void* gmem_src, uint32_t bytes,
                                              uint64_t* bar, uint64_t policy) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;"
      ::"r"(smem_addr(smem_dst)), "l"(gmem_src), "r"(bytes), "r"(smem_addr(bar)), "l"(policy)
      : "memory");
}

// One box of a tiled tensor map (TMA, cp.async.bulk.tensor) at coordinates (c0, c1, c2), inner
// first, into shared memory under L2 cache policy `policy`; completes the box's bytes on `bar`.
// `tensor_map` is the generic address of a CUtensorMap in parameter, constant or global memory (a
// __grid_constant__ kernel parameter). Coordinates outside the tensor read as zeros.
__device__ __forceinline__ void tma_load_3d(void* smem_dst, const void* tensor_map, int c0, int c1, int c2,
                                            uint64_t* bar, uint64_t policy) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1, {%2, %3, %4}], [%5], %6;"
      ::"r"(smem_addr(smem_dst)), "l"(tensor_map), "r"(c0), "r"(c1), "r"(c2), "r"(smem_addr(bar)), "l"(policy)
      : "memory");
}

// 16-byte cp.async (L2 only) under L2 cache policy `policy`; zero-fills when !pred.
__device__ __forceinline__ void cp_async_16_hint(void* smem_dst, const void* gmem_src, bool pred,
                                                 uint64_t policy) {
  asm volatile(
      "cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;"
      ::"r"(smem_addr(smem_dst)), "l"(gmem_src), "r"(pred ? 16 : 0), "l"(policy)
      : "memory");
}

// Arrives on `bar` once every cp.async this thread issued before has completed; the arrival
// counts against the barrier's expected count (.noinc).
__device__ __forceinline__ void cp_async_arrive_on(uint64_t* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(smem_addr(bar)) : "memory");
}

// Barrier `id` (1..15; 0 is __syncthreads) among `threads` threads (a multiple of 32).
__device__ __forceinline__ void named_barrier_sync(uint32_t id, uint32_t threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// setmaxnreg (sm_90a): the calling warpgroup's registers per thread from here on, raised or
// lowered; every warp of the warpgroup must execute it.
template <int Regs, bool Raise>
__device__ __forceinline__ void set_max_registers() {
  if constexpr (Raise) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(Regs));
  else asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(Regs));
}

__device__ __forceinline__ uint32_t ld_acquire_gpu(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

}  // namespace mlakit::kernels
