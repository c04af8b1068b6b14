// Phase timeline: per-CTA clock stamps at the phase boundaries of a kernel, for diagnosis only.
// Compiled in with the CMake option MLAKIT_TIMELINE=ON (a separate build directory); in every
// other build the stamps are no-ops and nothing here exists. With it, a launcher that wraps its
// launch in timeline::begin / timeline::end appends every launch's stamps to the file named by
// the environment variable MLAKIT_TIMELINE_OUT (nothing is recorded while it is unset), after a
// stream synchronize: the spans of such a run are not figures of merit, the stamps are.
// scripts/timeline.py turns the file into per-phase cycle counts. Devlog: dsa_decode_v2_fused.md,
// step 19.
//
// Each CTA (blockIdx.y x gridDim.x + blockIdx.x, the first kMaxCtas) owns kSlots 64-bit words;
// the Slot names say what a stamp marks. Clock stamps are SM cycles (clock64) of thread 0 of the
// CTA unless noted; kStartNs / kStopNs are %globaltimer (ns) and give the cycles per ns.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace mlakit::kernels::timeline {

enum Slot : int {
  kStart = 0,         // first instruction
  kSliced = 1,        // the index row compacted (slice_entries returned)
  kQReady = 2,        // consumers: Q in registers
  kFirstTile = 3,     // consumers: the first tile's rows landed
  kLastTile = 4,      // consumers: the last tile's rows landed
  kStored = 5,        // consumers: output or partial stored
  kMet = 6,           // split rows: every CTA of the row has its partial out
  kMerged = 7,        // split rows: this CTA's share merged and stored
  kCount = 8,         // value: valid slots of the CTA | splits of the row << 32
  kIssued = 9,        // producer (first warp of the first stage): the first stage requested
  kArrived = 10,      // split rows: thread 0's arrival posted (after the CTA barrier and fence)
  kStop = 11,         // last instruction
  kLastIssued = 12,   // producer: the last stage requested
  kSm = 13,           // value: %smid
  kStartNs = 14,      // %globaltimer at kStart
  kStopNs = 15,       // %globaltimer at kStop
  kLastQk = 16,       // consumers, last tile: S in smem
  kLastSoftmax = 17,  // consumers, last tile: P in smem
  kLastPv = 18,       // consumers, last tile: P V done
  kRowSums = 19,      // consumers: the row sums reduced
  kFillStart = 20,    // producer, first stage: its empty slot waited for
  kFillCopied = 21,   // producer, first stage: its rope rows issued (every copy out); v2_fp8 h64:
                      // its rows converted and stored
  kFillBulk = 22,     // producer, first stage: its bulk copies issued; v2_fp8 h64: its rows'
                      // loads issued (before fill_start: they fly while the buffer is waited for)
  kMergeLoaded = 23,  // split rows: thread 0's first batch of partials loaded and folded (dsa);
                      // every piece of the CTA's last split item arrived (mla)
  kCombined = 24,     // consumers of two warpgroups on one row (v2_fp8): warpgroup 1's state folded in
};
constexpr int kSlots = 25, kMaxCtas = 8192;

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

#define MLAKIT_STAMP_START(cond) ((cond) ? ::mlakit::kernels::timeline::start() : void())
#define MLAKIT_STAMP_STOP(cond) ((cond) ? ::mlakit::kernels::timeline::stop() : void())
// `slot` is a Slot's name (kSliced, ...).
#define MLAKIT_STAMP(cond, slot) \
  ((cond) ? ::mlakit::kernels::timeline::put(::mlakit::kernels::timeline::slot, clock64()) : void())
#define MLAKIT_STAMP_VALUE(cond, slot, v) \
  ((cond) ? ::mlakit::kernels::timeline::put(::mlakit::kernels::timeline::slot, (v)) : void())

namespace mlakit::kernels::timeline {
// A consumer's walk over the tiles of `count` slots that start at slot `first`, `step` slots
// apart: tile() stamps kFirstTile at the CTA's first tile (slot 0) and kLastTile at the walk's
// last, from `stamper` (thread 0), and says whether this is the walk's last tile for the stamper
// (the stamps of the last tile's phases).
struct TileWalk {
  int next, step, count;
  bool stamper;
  __device__ bool tile() {
    const bool last = stamper && next + step >= count;
    if (stamper && next == 0) put(kFirstTile, clock64());
    if (last) put(kLastTile, clock64());
    next += step;
    return last;
  }
};
}  // namespace mlakit::kernels::timeline
#else
namespace mlakit::kernels::timeline {
inline void begin(cudaStream_t) {}
inline void end(cudaStream_t, cudaError_t, int, const char*) {}
struct TileWalk {  // no stamps: never the last tile of anything stamped
  int next, step, count;
  bool stamper;
  __device__ bool tile() { return false; }
};
}  // namespace mlakit::kernels::timeline
#define MLAKIT_STAMP_START(cond) ((void)0)
#define MLAKIT_STAMP_STOP(cond) ((void)0)
#define MLAKIT_STAMP(cond, slot) ((void)0)
#define MLAKIT_STAMP_VALUE(cond, slot, v) ((void)0)
#endif
