// The phase hook: a kernel body marks the boundaries of its phases with timeline::phase(kSliced),
// ... (thread 0 of each CTA records the SM clock), for diagnosis only. Compiled in with the CMake
// option MLAKIT_TIMELINE=ON (a separate build directory); in every other build phase() is an empty
// inline function and nothing else here exists. With it, a launcher that wraps its launch in
// timeline::begin / timeline::end appends every launch's stamps to the file named by the
// environment variable MLAKIT_TIMELINE_OUT (nothing is recorded while it is unset), after a stream
// synchronize: the spans of such a run are not figures of merit, the stamps are. The lab's
// timeline script turns the file into per-phase cycle counts.
//
// Each CTA (blockIdx.y x gridDim.x + blockIdx.x, the first kMaxCtas) owns kSlots 64-bit words;
// the Slot names say what a stamp marks. Clock stamps are SM cycles (clock64) of thread 0 of the
// CTA unless noted; kStartNs / kStopNs are %globaltimer (ns) and give the cycles per ns.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace mlakit::kernels::timeline {

// The columns of the file format, one number each per CTA.
enum Slot : int {
  kStart = 0,    // first instruction
  kSliced = 1,   // the CTA's work known (the index row compacted, the schedule computed)
  kStored = 2,   // output or partial stored
  kMet = 3,      // split rows: every CTA of the row has its partial out
  kMerged = 4,   // split rows: this CTA's share merged and stored
  kCount = 5,    // value: the CTA's rows (or units) | its splits (or items) << 32
  kStop = 6,     // last instruction
  kSm = 7,       // value: %smid
  kStartNs = 8,  // %globaltimer at kStart
  kStopNs = 9,   // %globaltimer at kStop
};
constexpr int kSlots = 10, kMaxCtas = 8192;

}  // namespace mlakit::kernels::timeline

#ifdef MLAKIT_TIMELINE
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace mlakit::kernels::timeline {

// One array per translation unit: the launcher that reads it is in the same one.
static __device__ uint64_t g_stamps[kMaxCtas * kSlots];

__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ void put(int slot, uint64_t v) {
  const int cta = blockIdx.y * gridDim.x + blockIdx.x;
  if (cta < kMaxCtas) g_stamps[cta * kSlots + slot] = v;
}
__device__ __forceinline__ void start() {
  put(kStartNs, global_ns());
  put(kStart, clock64());
  uint32_t sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  put(kSm, sm);
}
__device__ __forceinline__ void stop() {
  put(kStop, clock64());
  put(kStopNs, global_ns());
}

// Host side: clear before the launch; after it, wait and append "L <kernel> <ctas>" and one line
// of kSlots numbers per CTA.
static inline void begin(cudaStream_t stream) {
  if (!std::getenv("MLAKIT_TIMELINE_OUT")) return;
  void* addr = nullptr;
  if (cudaGetSymbolAddress(&addr, g_stamps) == cudaSuccess) cudaMemsetAsync(addr, 0, sizeof(g_stamps), stream);
}
static inline void end(cudaStream_t stream, cudaError_t launched, int ctas, const char* kernel) {
  const char* path = std::getenv("MLAKIT_TIMELINE_OUT");
  void* addr = nullptr;
  if (!path || launched != cudaSuccess || cudaGetSymbolAddress(&addr, g_stamps) != cudaSuccess) return;
  ctas = ctas < kMaxCtas ? ctas : kMaxCtas;
  std::vector<unsigned long long> h(size_t(ctas) * kSlots);
  if (cudaStreamSynchronize(stream) != cudaSuccess ||
      cudaMemcpy(h.data(), addr, h.size() * sizeof(h[0]), cudaMemcpyDeviceToHost) != cudaSuccess)
    return;
  FILE* f = std::fopen(path, "a");
  if (!f) return;
  std::fprintf(f, "L %s %d\n", kernel, ctas);
  for (int c = 0; c < ctas; ++c) {
    for (int k = 0; k < kSlots; ++k) std::fprintf(f, k ? " %llu" : "%llu", h[size_t(c) * kSlots + k]);
    std::fprintf(f, "\n");
  }
  std::fclose(f);
}

}  // namespace mlakit::kernels::timeline

namespace mlakit::kernels::timeline {
// Thread 0 of the CTA stamps the boundary `slot` (kStart and kStop also take %globaltimer and the
// SM); the other threads do nothing.
__device__ __forceinline__ void phase(Slot slot) {
  if (threadIdx.x != 0) return;
  if (slot == kStart) start();
  else if (slot == kStop) stop();
  else put(slot, clock64());
}
// Thread 0 records a value (kCount) instead of a clock.
__device__ __forceinline__ void phase_value(Slot slot, uint64_t value) {
  if (threadIdx.x == 0) put(slot, value);
}
}  // namespace mlakit::kernels::timeline
#else
namespace mlakit::kernels::timeline {
inline void begin(cudaStream_t) {}
inline void end(cudaStream_t, cudaError_t, int, const char*) {}
__device__ __forceinline__ void phase(Slot) {}
__device__ __forceinline__ void phase_value(Slot, uint64_t) {}
}  // namespace mlakit::kernels::timeline
#endif
