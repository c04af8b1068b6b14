// Thread-block clusters (sm_90): the cluster barrier and loads from another CTA's shared memory
// (distributed shared memory). Thin wrappers over the PTX instructions (PTX ISA 8.0,
// "barrier.cluster", "mapa", "ld.shared::cluster").
//
// A thread that has exited counts as arrived at every later cluster barrier (PTX ISA, "exit"), so
// CTAs or warps that leave early do not hold the others up; a CTA whose shared memory others read
// must not exit before they are done (a barrier after the reads).
#pragma once

#include <cstdint>

namespace mlakit::kernels {

// Arrival orders this thread's earlier memory accesses (shared memory included) before the wait of
// every thread of the cluster; the wait returns once every non-exited thread of the cluster arrived.
__device__ __forceinline__ void cluster_arrive_release() {
  asm volatile("barrier.cluster.arrive.release;" ::: "memory");
}
__device__ __forceinline__ void cluster_wait_acquire() {
  asm volatile("barrier.cluster.wait.acquire;" ::: "memory");
}
__device__ __forceinline__ void cluster_sync() {
  cluster_arrive_release();
  cluster_wait_acquire();
}

// The shared::cluster address of shared-memory address `addr` (shared::cta, this CTA's layout) in
// the CTA of rank `rank`.
__device__ __forceinline__ uint32_t map_shared_rank(uint32_t addr, uint32_t rank) {
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(addr), "r"(rank));
  return r;
}

__device__ __forceinline__ float4 ld_shared_cluster_v4(uint32_t addr) {
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}
__device__ __forceinline__ float2 ld_shared_cluster_v2(uint32_t addr) {
  float2 v;
  asm volatile("ld.shared::cluster.v2.f32 {%0, %1}, [%2];" : "=f"(v.x), "=f"(v.y) : "r"(addr) : "memory");
  return v;
}

}  // namespace mlakit::kernels
