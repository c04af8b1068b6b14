// Micro-benchmark: the pace of v2_fp8 h64's ring, outside the kernel. A producer warpgroup gathers
// 656-byte FP8 rows (v2_fp8's layout: 512 E4M3 bytes, 64 bf16 rope dims, 4 fp32 scales) into
// registers a stage ahead, dequantizes them and stores 1,152 bf16 bytes per row into shared-memory
// stages of 32 rows; a consumer warpgroup reads each stage whole (16-byte LDS into a checksum) and
// spins `work` cycles per stage, the stand-in for the kernel's wgmma. Which part of the FP8 kernel's
// distance to its bf16 twin is the ring's own structure (the devlog's `noload` and `noconv` builds
// split it 26-30 % loads, 12-13 % conversion at T = 128)? Knobs, one line each:
//   hold      stages the consumer holds at once and frees together: 1; 2, a 64-row tile; or 4,
//             the whole ring, as h64's seesaw, whose two warpgroups both read both tiles of a
//             pair and free them near its end (devlog step 21);
//   stages    ring depth (4: the kernel's; 6: what two more would buy if shared memory allowed; 2:
//             one tile, the room of the other two given to raw areas);
//   convert   the kernel's dequantization (its dequantize_word: E4M3 -> f16 -> fp32, times the
//             row's scale, -> bf16),
//             or a stand-in widening of the same bytes (w, w ^ 0x5a5a5a5a);
//   source    where the rows come from and how: `load` (the kernel's until step 20: 16-byte
//             ld.global.nc with L1::no_allocate from 688 MB of rows), `noload` (every row is row
//             0, from L1: the kernel's math-alone diagnosis build), `l2` (the slots within 43 MB:
//             L2 hits), `alloc` (as load, but the loads allocate in L1: the kernel's since),
//             `evfirst` / `evlast` (allocating with L1::evict_first / evict_last), `cg` / `cs`
//             (ld.global.cg / .cs, not through the non-coherent path), `bulk` (one cp.async.bulk
//             per row into a raw area of the warp's 16 rows, 10.5 KB a warp, read back by LDS into the
//             same registers; the next stage's copies leave as soon as the area is read),
//             `inplace` (the stage's own buffer as the raw area: once it is free, one
//             cp.async.bulk per row into its first 21 KB, read back by LDS, the warp pair meets,
//             then the bf16 rows overwrite it; no bytes in flight before the buffer frees; until
//             step 21 this line also issued the `load` line's loads, unused);
//             The copy family (no conversion, no registers: the raw rows land in the stage, as
//             the bf16 kernels' rows do, and the consumer reads 32 x 656 bytes): `copy-cg` (16-byte
//             cp.async.cg, which bypasses L1: v2_fused h64's and mla_decode m64's copies),
//             `copy-ca` (cp.async.ca, allocating in L1), `copy-bulk` (one cp.async.bulk per row),
//             `copy-row0` (cp.async.ca of row 0 only: L1 hits); each lane's cp.async arrive on
//             the stage's full barrier when they land; the paced sources `alloc-br`, `load-br`,
//             `alloc-sl`, `alloc-tr` (the loads spread out three ways: at flavour_of below);
//   relaxed   the producers' arrival without release (formally racy; the kernel measured it -4 %).
// Each line is the median of 9 launches (132 CTAs, one per SM, 256 stages each) after every
// launch's checksum matched the host's: ns per stage per SM and GB/s of 656-byte rows. Each line is
// its own kernel (the source a template argument): while the sources were switches at run time,
// adding lines changed the code of the others, and a line's time with it by up to 20 % (step 21).
//
// The consumer's time spent waiting on full barriers is printed beside (cycles a stage, thread 0):
// whether a slower line waits for the producers or reads its stages slower.
//
//   cmake --build build --target mlakit_micro_fp8_ring_pace   (configured with -DMLAKIT_BUILD_LAB=ON)
//   build/lab/fp8_ring_pace [--work CYCLES ...]   (default: 0 and 2000)
//
// Measured (H200, FP8 devlog step 21, four runs of this build, within 1 % but `inplace`), ns a
// stage at work 2000: `noload` 2,240-2,258, `load` 2,794-2,815 (the loads cost ~550 ns while the
// consumer waits only ~110 ns more: its own reads are slower), `alloc` 2,597-2,607, `evlast`
// 2,555-2,570, `bulk` 2,337-2,349, `inplace` 2,081-2,244; six stages, the relaxed arrival and
// L2-resident rows do not help the loads. At hold 4 (the seesaw's) `inplace` loses to `alloc`
// (2,717 against 2,586; the consumer waits 1,495 cycles a stage against 686): its bytes wait for
// the ring to free. The copy family: `copy-cg` 1,869-1,887, `copy-ca` 1,904-1,924 (no better),
// `copy-bulk` 1,819-1,831, `copy-row0` 1,872-1,883. The paced sources (three runs): `alloc-br`
// 2,261-2,278 at hold 2 (the loads' cost gone) and 2,454-2,472 at hold 4 (alloc 2,562-2,586),
// `load-br` 2,536-2,550, `alloc-sl` 2,639-2,661 and `alloc-tr` 2,646 (one run): spacing the loads
// by a branch each or by a sleep per row does not do what the switch does; why is open, and in the
// kernel both the switch (+10 %) and the branch (+20 %) lost (step 21).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/common/async_pipe.cuh"
#include "kernels/dsa_decode/v2_fp8/h64.cuh"  // dequantize_word, the conversion timed here

#include "micro.h"

namespace {

using mlakit::kernels::L2Evict;
using mlakit::kernels::bulk_copy_g2s;
using mlakit::kernels::fence_async_smem;
using mlakit::kernels::l2_policy;
using mlakit::kernels::mbar_arrive;
using mlakit::kernels::mbar_arrive_expect_tx;
using mlakit::kernels::mbar_fence_init;
using mlakit::kernels::mbar_init;
using mlakit::kernels::mbar_wait;
using mlakit::kernels::smem_addr;
using mlakit::dsa_v2_fp8::h64::dequantize_word;

constexpr int kRowBytes = 656, kRopeOffset = 512, kScaleOffset = 640;
constexpr int kStageRows = 32;
constexpr int kOutRowBytes = 1152;               // 512 latent dims + 64 rope dims, bf16
constexpr int kPitch = kOutRowBytes + 16;        // a 16-byte skew per row spreads the banks
constexpr int kStageBytes = kStageRows * kPitch;  // 37,376
constexpr int kMaxStages = 6;
constexpr int kProducerWarps = 4, kConsumerThreads = 128;
constexpr int kThreads = kProducerWarps * 32 + kConsumerThreads;
constexpr int kRowsPerLane = 4;
constexpr uint32_t kMix = 0x5a5a5a5au;
constexpr int64_t kNumRows = int64_t(1) << 20;   // 688 MB of rows: far past the L2

enum Source { kLoad = 0, kNoload = 1, kL2 = 2, kAlloc = 3, kBulk = 4, kInplace = 5, kEvictFirst = 6, kEvictLast = 7,
              kCg = 8, kCs = 9, kCopyCg = 10, kCopyCa = 11, kCopyBulk = 12, kCopyRow0 = 13, kAllocBranch = 14,
              kLoadBranch = 15, kAllocSleep = 16, kAllocTrap = 17 };
const char* const kSourceNames[] = {"load",    "noload", "l2", "alloc",   "bulk",    "inplace",   "evfirst",
                                    "evlast",  "cg",     "cs", "copy-cg", "copy-ca", "copy-bulk", "copy-row0",
                                    "alloc-br", "load-br", "alloc-sl", "alloc-tr"};
// The copy family: the rows land in the stage as they are (656 bytes each, packed), no producer
// registers in between, as the bf16 kernels' rows do.
__host__ __device__ constexpr bool is_copy(int source) { return source >= kCopyCg && source <= kCopyRow0; }
// The paced sources: `alloc-br` / `load-br` (the alloc / load flavour chosen per load by a switch
// at run time, as a build did by accident before step 21: ptxas then issues each load behind the
// switch's compares and branches, not in one burst), `alloc-sl` (alloc, and 100 ns of nanosleep
// after each row's six loads), `alloc-tr` (alloc, each load followed by a branch to a trap
// if the load's address is 1: one compare and one branch between loads).
__host__ __device__ constexpr int flavour_of(int source) {
  return source == kNoload || source == kAllocBranch || source == kAllocSleep || source == kAllocTrap ? kAlloc
         : source == kL2 || source == kLoadBranch                            ? kLoad
                                                                              : source;
}
struct Knobs {
  int hold, stages, source, relaxed;
  long long work;
};
constexpr int kWarpRows = 16;                       // a producer warp's rows of a stage
constexpr int kRawBytes = kWarpRows * kRowBytes;    // its raw area in the bulk source: 10,496
constexpr int kRawOffset = 4 * kStageBytes;         // the bulk source runs with a ring of 2 or 4 stages
constexpr int kBarOffset = kMaxStages * kStageBytes;
static_assert(kRawOffset + kProducerWarps * kRawBytes <= kBarOffset, "the raw areas fit below the barriers");

// 16 and 4 bytes into registers by the load flavour of a source (kLoad, kAlloc, kEvictFirst,
// kEvictLast, kCg, kCs; the others map onto these): one instruction per flavour, LOAD given its
// name without the width.
#define FP8_RING_BY_FLAVOUR(LOAD)                      \
  if constexpr (Flavour == kAlloc)                     \
    LOAD("ld.global.nc");                              \
  else if constexpr (Flavour == kEvictFirst)           \
    LOAD("ld.global.nc.L1::evict_first");              \
  else if constexpr (Flavour == kEvictLast)            \
    LOAD("ld.global.nc.L1::evict_last");               \
  else if constexpr (Flavour == kCg)                   \
    LOAD("ld.global.cg");                              \
  else if constexpr (Flavour == kCs)                   \
    LOAD("ld.global.cs");                              \
  else                                                 \
    LOAD("ld.global.nc.L1::no_allocate")
#define FP8_RING_LOAD16(OP)                                                          \
  asm volatile(OP ".v4.u32 {%0, %1, %2, %3}, [%4];"                                  \
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)                          \
               : "l"(p))
#define FP8_RING_LOAD4(OP) asm volatile(OP ".b32 %0, [%1];" : "=r"(v) : "l"(p))
template <int Flavour>
__device__ __forceinline__ uint4 ld16(const void* p) {
  uint4 v;
  FP8_RING_BY_FLAVOUR(FP8_RING_LOAD16);
  return v;
}
template <int Flavour>
__device__ __forceinline__ uint32_t ld4(const void* p) {
  uint32_t v;
  FP8_RING_BY_FLAVOUR(FP8_RING_LOAD4);
  return v;
}
// The flavour chosen at run time (the paced sources): `load` called with it as a constant.
template <class Load>
__device__ __forceinline__ auto by_flavour(int flavour, Load load) {
  switch (flavour) {
    case kAlloc: return load(std::integral_constant<int, kAlloc>{});
    case kEvictFirst: return load(std::integral_constant<int, kEvictFirst>{});
    case kEvictLast: return load(std::integral_constant<int, kEvictLast>{});
    case kCg: return load(std::integral_constant<int, kCg>{});
    case kCs: return load(std::integral_constant<int, kCs>{});
    default: return load(std::integral_constant<int, kLoad>{});
  }
}
__device__ __forceinline__ uint4 ld16_rt(int flavour, const void* p) {
  return by_flavour(flavour, [p](auto f) { return ld16<decltype(f)::value>(p); });
}
__device__ __forceinline__ uint32_t ld4_rt(int flavour, const void* p) {
  return by_flavour(flavour, [p](auto f) { return ld4<decltype(f)::value>(p); });
}

struct Share {
  uint4 latent[4];
  uint4 rope;
  uint32_t scale;
};

template <bool Convert, int Source>
__device__ void produce(uint8_t* smem, uint64_t* full, uint64_t* empty, uint64_t* raw_full, const uint8_t* rows,
                        const int32_t* slots, int num_stages, int pw, const Knobs& k) {
  const int lane = threadIdx.x % 32, c = lane % 8, group = lane & ~7;
  const int row0 = (pw % 2 * 4 + lane / 8) * kRowsPerLane;
  uint8_t* raw = smem + kRawOffset + pw * kRawBytes;  // the bulk source's area: the warp's 16 rows
  const uint64_t policy = l2_policy(L2Evict::kFirst);
  Share x[kRowsPerLane];
  // Registers from global memory (every source but bulk and inplace).
  constexpr int kFlavour = flavour_of(Source);
  constexpr bool kBranch = Source == kAllocBranch || Source == kLoadBranch;
  int flavour = k.source == kAllocBranch ? kAlloc : kLoad;  // opaque to the compiler: a switch per load
  asm volatile("mov.b32 %0, %0;" : "+r"(flavour));
  const auto pace = [&](const void* a) {  // alloc-tr: a branch the compiler cannot merge with the next one
    if constexpr (Source == kAllocTrap)
      if (reinterpret_cast<uintptr_t>(a) == 1) asm volatile("trap;");  // the load's address: never odd
  };
  const auto load = [&](int i) {
    const int4 sl = *reinterpret_cast<const int4*>(slots + i * kStageRows + row0);
    const int32_t slot[4] = {sl.x, sl.y, sl.z, sl.w};
#pragma unroll
    for (int u = 0; u < kRowsPerLane; ++u) {
      const uint8_t* row = rows + int64_t(Source == kNoload ? 0 : slot[u]) * kRowBytes;
#pragma unroll
      for (int m = 0; m < 4; ++m) {
        x[u].latent[m] = kBranch ? ld16_rt(flavour, row + 128 * m + 16 * c) : ld16<kFlavour>(row + 128 * m + 16 * c);
        pace(row + 128 * m + 16 * c);
      }
      x[u].rope = kBranch ? ld16_rt(flavour, row + kRopeOffset + 16 * c) : ld16<kFlavour>(row + kRopeOffset + 16 * c);
      pace(row + kRopeOffset + 16 * c);
      x[u].scale = kBranch ? ld4_rt(flavour, row + kScaleOffset + 4 * (c % 4))
                           : ld4<kFlavour>(row + kScaleOffset + 4 * (c % 4));
      pace(row + kScaleOffset + 4 * (c % 4));
      if constexpr (Source == kAllocSleep) __nanosleep(100);
    }
  };
  // The bulk source: stage i's rows of the warp into its raw area (lane 8 g + 0 copies the four
  // rows of lane group g), then back into registers once they landed.
  // The inplace source: row r of the stage at r x 656 of its buffer.
  const auto raw_row = [&](uint8_t* area, int u) {
    return Source == kInplace ? area + (row0 + u) * kRowBytes : area + (lane / 8 * 4 + u) * kRowBytes;
  };
  const auto copy = [&](int i, uint8_t* area) {
    if (lane == 0) mbar_arrive_expect_tx(raw_full, kRawBytes);
    if (c == 0) {
      const int4 sl = *reinterpret_cast<const int4*>(slots + i * kStageRows + row0);
      const int32_t slot[4] = {sl.x, sl.y, sl.z, sl.w};
#pragma unroll
      for (int u = 0; u < kRowsPerLane; ++u)
        bulk_copy_g2s(raw_row(area, u), rows + int64_t(slot[u]) * kRowBytes, kRowBytes, raw_full, policy);
    }
  };
  int landed = 0;  // the raw area's completed phases
  const auto read_raw = [&](uint8_t* area) {
    mbar_wait(raw_full, landed++ & 1);
#pragma unroll
    for (int u = 0; u < kRowsPerLane; ++u) {
      const uint8_t* row = raw_row(area, u);
#pragma unroll
      for (int m = 0; m < 4; ++m) x[u].latent[m] = *reinterpret_cast<const uint4*>(row + 128 * m + 16 * c);
      x[u].rope = *reinterpret_cast<const uint4*>(row + kRopeOffset + 16 * c);
      x[u].scale = *reinterpret_cast<const uint32_t*>(row + kScaleOffset + 4 * (c % 4));
    }
    __syncwarp();
    fence_async_smem();  // the area's next copies (the async proxy) after these reads
  };
  constexpr bool bulk = Source == kBulk, inplace = Source == kInplace;
  int i = pw / 2;
  if (i < num_stages) {
    if constexpr (bulk)
      copy(i, raw);
    else if constexpr (!inplace)
      load(i);
  }
  for (; i < num_stages; i += 2) {
    if constexpr (bulk) {
      read_raw(raw);
      if (i + 2 < num_stages) copy(i + 2, raw);
    }
    const int b = i % k.stages;
    mbar_wait(&empty[b], ((i / k.stages) & 1) ^ 1);
    uint8_t* stage = smem + b * kStageBytes;
    if constexpr (inplace) {
      copy(i, stage);
      read_raw(stage);
      asm volatile("bar.sync %0, 64;" ::"r"(1 + pw / 2) : "memory");  // the pair has read the raw rows
    }
#pragma unroll
    for (int u = 0; u < kRowsPerLane; ++u) {
      uint8_t* dst = stage + (row0 + u) * kPitch;
#pragma unroll
      for (int m = 0; m < 4; ++m) {
        const uint4 v = x[u].latent[m];
        uint4 lo, hi;
        if constexpr (Convert) {
          const float scale = __uint_as_float(__shfl_sync(0xffffffffu, x[u].scale, group + m));
          dequantize_word(v.x, scale, lo.x, lo.y);
          dequantize_word(v.y, scale, lo.z, lo.w);
          dequantize_word(v.z, scale, hi.x, hi.y);
          dequantize_word(v.w, scale, hi.z, hi.w);
        } else {
          lo = make_uint4(v.x, v.y, v.x ^ kMix, v.y ^ kMix);
          hi = make_uint4(v.z, v.w, v.z ^ kMix, v.w ^ kMix);
        }
        *reinterpret_cast<uint4*>(dst + 256 * m + 32 * c) = lo;
        *reinterpret_cast<uint4*>(dst + 256 * m + 32 * c + 16) = hi;
      }
      *reinterpret_cast<uint4*>(dst + 1024 + 16 * c) = x[u].rope;
    }
    fence_async_smem();  // as the kernel: wgmma reads the stage
    if (k.relaxed)
      mbar_arrive_relaxed(&full[b]);
    else
      mbar_arrive(&full[b]);
    if constexpr (!bulk && !inplace)
      if (i + 2 < num_stages) load(i + 2);
  }
}

// The copy family's producer warp: stage i's 16 rows of the warp straight into the stage, 656
// bytes a row at 656 r, by 16-byte cp.async (each lane every 32nd chunk of the warp's 656) or one
// bulk copy per row (lanes 0-15); no registers hold rows, so a warp goes on to its next stage as
// soon as that buffer is free.
template <int Source>
__device__ void produce_copy(uint8_t* smem, uint64_t* full, uint64_t* empty, const uint8_t* rows,
                             const int32_t* slots, int num_stages, int pw, const Knobs& k) {
  constexpr int kChunks = kRowBytes / 16;  // 41 a row
  const int lane = threadIdx.x % 32, first_row = pw % 2 * kWarpRows;
  const uint64_t policy = l2_policy(L2Evict::kFirst);
  for (int i = pw / 2; i < num_stages; i += 2) {
    const int b = i % k.stages;
    mbar_wait(&empty[b], ((i / k.stages) & 1) ^ 1);
    uint8_t* stage = smem + b * kStageBytes + first_row * kRowBytes;
    const int my_slot = lane < kWarpRows ? (Source == kCopyRow0 ? 0 : slots[i * kStageRows + first_row + lane]) : 0;
    if constexpr (Source == kCopyBulk) {
      if (lane == 0)
        mbar_arrive_expect_tx(&full[b], kRawBytes);
      else
        mbar_arrive(&full[b]);
      if (lane < kWarpRows)
        bulk_copy_g2s(stage + lane * kRowBytes, rows + int64_t(my_slot) * kRowBytes, kRowBytes, &full[b], policy);
      continue;
    }
    constexpr int kRounds = (kWarpRows * kChunks + 31) / 32;  // 21: the last one covers half the warp
#pragma unroll 3
    for (int t = 0; t < kRounds; ++t) {
      const int j = lane + 32 * t, r = min(j / kChunks, kWarpRows - 1), q = j % kChunks;
      const int slot = __shfl_sync(0xffffffffu, my_slot, r);  // every lane takes part in every round
      if (j >= kWarpRows * kChunks) continue;
      const uint8_t* src = rows + int64_t(slot) * kRowBytes + 16 * q;
      const uint32_t dst = smem_addr(stage + r * kRowBytes + 16 * q);
      if constexpr (Source == kCopyCg)
        asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "l"(policy)
                     : "memory");
      else
        asm volatile("cp.async.ca.shared.global.L2::cache_hint [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "l"(policy)
                     : "memory");
    }
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(smem_addr(&full[b])) : "memory");
  }
}

// Sum of the 16-bit halves of every stored word (the order of halves and words does not matter).
__device__ __forceinline__ uint32_t halves(uint32_t w) { return (w & 0xffffu) + (w >> 16); }

template <bool Copy>
__device__ void consume(const uint8_t* ring, uint64_t* full, uint64_t* empty, int num_stages, const Knobs& k,
                        uint32_t* checksum, unsigned long long* waited) {
  const int t = threadIdx.x - kProducerWarps * 32;
  uint32_t sum = 0;
  long long wait_cycles = 0;
  for (int i0 = 0; i0 < num_stages; i0 += k.hold) {
    for (int i = i0; i < i0 + k.hold; ++i) {
      const int b = i % k.stages;
      const long long before = clock64();
      mbar_wait(&full[b], (i / k.stages) & 1);
      wait_cycles += clock64() - before;
      const uint8_t* stage = ring + b * kStageBytes;
      // The copy family's stage: 32 raw rows of 656 bytes, packed; else 32 bf16 rows at kPitch.
      constexpr int row_chunks = Copy ? kRowBytes / 16 : kOutRowBytes / 16;
      constexpr int pitch = Copy ? kRowBytes : kPitch;
#pragma unroll 2
      for (int j = t; j < kStageRows * row_chunks; j += kConsumerThreads) {
        const int r = j / row_chunks, q = j % row_chunks;
        const uint4 v = *reinterpret_cast<const uint4*>(stage + r * pitch + 16 * q);
        sum += halves(v.x) + halves(v.y) + halves(v.z) + halves(v.w);
      }
    }
    if (k.work > 0) {
      const long long until = clock64() + k.work * k.hold;
      while (clock64() < until) {
      }
    }
    for (int i = i0; i < i0 + k.hold; ++i) mbar_arrive(&empty[i % k.stages]);
  }
  atomicAdd(checksum, sum);
  if (t == 0) atomicAdd(waited, (unsigned long long)wait_cycles);
}

template <bool Convert, int Source>
__global__ void __launch_bounds__(kThreads, 1)
    ring_kernel(const uint8_t* rows, const int32_t* slots, int num_stages, Knobs k, uint32_t* checksum,
                unsigned long long* waited) {
  extern __shared__ __align__(128) uint8_t smem[];
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + kBarOffset);
  uint64_t* empty = full + kMaxStages;
  uint64_t* raw_full = empty + kMaxStages;  // one per producer warp (the bulk source)
  if (threadIdx.x == 0) {
    for (int b = 0; b < k.stages; ++b) {
      mbar_init(&full[b], 64);  // the 64 lanes of a stage's warp pair
      mbar_init(&empty[b], kConsumerThreads);
    }
    for (int w = 0; w < kProducerWarps; ++w) mbar_init(&raw_full[w], 1);
    mbar_fence_init();
  }
  __syncthreads();
  const int32_t* my_slots = slots + int64_t(blockIdx.x) * num_stages * kStageRows;
  const int warp = threadIdx.x / 32;
  if (warp < kProducerWarps) {
    if constexpr (is_copy(Source))
      produce_copy<Source>(smem, full, empty, rows, my_slots, num_stages, warp, k);
    else
      produce<Convert, Source>(smem, full, empty, raw_full + warp % kProducerWarps, rows, my_slots, num_stages, warp,
                               k);
  } else {
    consume<is_copy(Source)>(smem, full, empty, num_stages, k, checksum, waited);
  }
}

// Host: an E4M3 byte (no NaN codes in the data) as a float.
float e4m3(uint8_t b) {
  const int e = (b >> 3) & 15, m = b & 7;
  const float v = e == 0 ? std::ldexp(float(m) / 8.0f, -6) : std::ldexp(1.0f + float(m) / 8.0f, e - 7);
  return (b & 0x80) ? -v : v;
}
uint32_t bf16_bits(float f) {  // exact here (a 3-bit mantissa times a power of two)
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u >> 16;
}
uint32_t halves_host(uint32_t w) { return (w & 0xffffu) + (w >> 16); }

// The checksum one row contributes, converted or widened (`table`: the 256 E4M3 codes as floats).
uint32_t row_sum(const uint8_t* row, bool convert, const float* table) {
  uint32_t s = 0;
  for (int m = 0; m < 4; ++m) {
    float scale;
    std::memcpy(&scale, row + kScaleOffset + 4 * m, 4);
    for (int q = 0; q < 32; ++q) {  // the 32 words of scale tile m
      uint32_t w;
      std::memcpy(&w, row + 128 * m + 4 * q, 4);
      if (convert) {
        for (int byte = 0; byte < 4; ++byte) s += bf16_bits(table[(w >> (8 * byte)) & 0xff] * scale);
      } else {
        s += halves_host(w) + halves_host(w ^ kMix);
      }
    }
  }
  for (int q = 0; q < 32; ++q) {
    uint32_t w;
    std::memcpy(&w, row + kRopeOffset + 4 * q, 4);
    s += halves_host(w);
  }
  return s;
}

// The checksum one row contributes in the copy family: its 656 bytes as they are.
uint32_t raw_row_sum(const uint8_t* row) {
  uint32_t s = 0;
  for (int q = 0; q < kRowBytes / 4; ++q) {
    uint32_t w;
    std::memcpy(&w, row + 4 * q, 4);
    s += halves_host(w);
  }
  return s;
}

template <bool Convert, int Source>
int run(const uint8_t* rows, const int32_t* slots, int ctas, int num_stages, const Knobs& k, uint32_t want,
        uint32_t* checksum, unsigned long long* waited) {
  const int smem = kBarOffset + (2 * kMaxStages + kProducerWarps) * 8;
  MICRO_CHECK(cudaFuncSetAttribute(ring_kernel<Convert, Source>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  cudaEvent_t a, b;
  MICRO_CHECK(cudaEventCreate(&a));
  MICRO_CHECK(cudaEventCreate(&b));
  std::vector<long long> ns, waits;
  for (int rep = 0; rep < 10; ++rep) {
    MICRO_CHECK(cudaMemset(checksum, 0, sizeof(uint32_t)));
    MICRO_CHECK(cudaMemset(waited, 0, sizeof(unsigned long long)));
    MICRO_CHECK(cudaEventRecord(a));
    ring_kernel<Convert, Source><<<ctas, kThreads, smem>>>(rows, slots, num_stages, k, checksum, waited);
    MICRO_CHECK(cudaEventRecord(b));
    uint32_t got = 0;
    if (finish_and_read(b, checksum, got)) return 1;
    if (got != want) {
      std::fprintf(stderr, "checksum %08x, expected %08x\n", got, want);
      return 1;
    }
    unsigned long long w = 0;
    MICRO_CHECK(cudaMemcpy(&w, waited, sizeof w, cudaMemcpyDeviceToHost));
    float ms = 0;
    MICRO_CHECK(cudaEventElapsedTime(&ms, a, b));
    if (rep > 0) {
      ns.push_back((long long)(ms * 1e6));
      waits.push_back((long long)(w / (unsigned long long)(ctas) / (unsigned long long)(num_stages)));
    }
  }
  const long long t = median(ns);
  const double bytes = double(ctas) * num_stages * kStageRows * kRowBytes;
  std::printf("work %5lld  hold %d  stages %d  %-7s %-7s %-7s  %7.1f ns per stage per SM  %6.0f GB/s  "
              "consumer waits %5lld cycles a stage\n",
              k.work, k.hold, k.stages, Convert ? "convert" : "widen", kSourceNames[Source],
              k.relaxed ? "relaxed" : "release", double(t) / num_stages, bytes / double(t), median(waits));
  return 0;
}

// run<Convert, Source> for a source known at run time: every line is its own kernel, so one line's
// code cannot change another's.
template <bool Convert, int... S>
int run_line(std::integer_sequence<int, S...>, const uint8_t* rows, const int32_t* slots, int ctas, int num_stages,
             const Knobs& k, uint32_t want, uint32_t* checksum, unsigned long long* waited) {
  int rc = 2;
  ((k.source == S ? (rc = run<Convert, S>(rows, slots, ctas, num_stages, k, want, checksum, waited)) : 0), ...);
  return rc;
}
constexpr auto kSources = std::make_integer_sequence<int, kAllocTrap + 1>{};

}  // namespace

int main(int argc, char** argv) {
  std::vector<long long> works;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--work") == 0 && i + 1 < argc) {
      works.push_back(std::atoll(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: %s [--work CYCLES ...]\n", argv[0]);
      return 2;
    }
  }
  if (works.empty()) works = {0, 2000};
  int sms = 0;
  MICRO_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int num_stages = 256;  // 8,192 rows per SM
  std::mt19937_64 rng(11);
  std::vector<uint8_t> bytes(size_t(kNumRows) * kRowBytes);
  for (int64_t r = 0; r < kNumRows; ++r) {
    uint8_t* row = bytes.data() + r * kRowBytes;
    for (int q = 0; q < kScaleOffset / 8; ++q) {
      uint64_t w = rng();
      if (q < kRopeOffset / 8) w &= 0xf7f7f7f7f7f7f7f7ull;  // no E4M3 NaN (0x7f, 0xff) in the latent
      std::memcpy(row + 8 * q, &w, 8);
    }
    for (int m = 0; m < 4; ++m) {
      const float scale = std::ldexp(1.0f, int(rng() % 5) - 2);  // powers of two, as the format's
      std::memcpy(row + kScaleOffset + 4 * m, &scale, 4);
    }
  }
  std::vector<int32_t> slots(size_t(sms) * num_stages * kStageRows);
  std::uniform_int_distribution<int32_t> pick(0, int32_t(kNumRows - 1));
  for (auto& s : slots) s = pick(rng);
  float table[256];
  for (int b = 0; b < 256; ++b) table[b] = e4m3(uint8_t(b));
  constexpr int32_t kL2Rows = 1 << 16;
  std::vector<int32_t> slots_l2(slots);
  for (auto& s : slots_l2) s &= kL2Rows - 1;
  uint32_t want[2][3] = {};  // [convert][random slots, row 0, slots within 2^16 rows]
  for (int cv = 0; cv < 2; ++cv) {
    std::vector<uint32_t> per_row(kNumRows);
    for (int64_t r = 0; r < kNumRows; ++r) per_row[r] = row_sum(bytes.data() + r * kRowBytes, cv == 1, table);
    for (const int32_t s : slots) want[cv][0] += per_row[s];
    want[cv][1] = uint32_t(slots.size()) * per_row[0];
    for (const int32_t s : slots_l2) want[cv][2] += per_row[s];
  }
  uint32_t want_copy[2] = {};  // [random slots, row 0]
  {
    std::vector<uint32_t> per_row(kNumRows);
    for (int64_t r = 0; r < kNumRows; ++r) per_row[r] = raw_row_sum(bytes.data() + r * kRowBytes);
    for (const int32_t s : slots) want_copy[0] += per_row[s];
    want_copy[1] = uint32_t(slots.size()) * per_row[0];
  }
  uint8_t* d_rows = nullptr;
  int32_t* d_slots = nullptr;
  int32_t* d_slots_l2 = nullptr;
  uint32_t* d_sum = nullptr;
  unsigned long long* d_waited = nullptr;
  MICRO_CHECK(cudaMalloc(&d_rows, bytes.size()));
  MICRO_CHECK(cudaMalloc(&d_slots, slots.size() * sizeof(int32_t)));
  MICRO_CHECK(cudaMalloc(&d_slots_l2, slots.size() * sizeof(int32_t)));
  MICRO_CHECK(cudaMalloc(&d_sum, sizeof(uint32_t)));
  MICRO_CHECK(cudaMalloc(&d_waited, sizeof(unsigned long long)));
  MICRO_CHECK(cudaMemcpy(d_slots_l2, slots_l2.data(), slots_l2.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
  MICRO_CHECK(cudaMemcpy(d_rows, bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
  MICRO_CHECK(cudaMemcpy(d_slots, slots.data(), slots.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
  std::printf("%d SMs, one CTA each, %d stages of %d rows of %d bytes per CTA\n", sms, num_stages, kStageRows,
              kRowBytes);
  struct Line {
    bool convert;
    Knobs k;
  };
  for (const long long w : works) {
    const Line lines[] = {
        {true, {2, 4, kLoad, 0, w}},   {true, {2, 4, kNoload, 0, w}}, {true, {2, 4, kL2, 0, w}},
        {true, {2, 4, kAlloc, 0, w}},  {true, {2, 4, kBulk, 0, w}},   {false, {2, 4, kLoad, 0, w}},
        {false, {2, 4, kNoload, 0, w}}, {false, {2, 4, kBulk, 0, w}}, {true, {2, 6, kLoad, 0, w}},
        {true, {2, 4, kLoad, 1, w}},   {true, {1, 4, kLoad, 0, w}},   {true, {2, 4, kInplace, 0, w}},
        {true, {2, 6, kInplace, 0, w}}, {true, {1, 4, kInplace, 0, w}}, {true, {1, 4, kNoload, 0, w}},
        {true, {2, 4, kEvictFirst, 0, w}}, {true, {2, 4, kEvictLast, 0, w}}, {true, {2, 4, kCg, 0, w}},
        {true, {2, 4, kCs, 0, w}},     {true, {2, 2, kLoad, 0, w}},   {true, {2, 2, kNoload, 0, w}},
        {true, {2, 2, kBulk, 0, w}},   {false, {2, 4, kCopyCg, 0, w}}, {false, {2, 4, kCopyCa, 0, w}},
        {false, {2, 4, kCopyBulk, 0, w}}, {false, {2, 4, kCopyRow0, 0, w}}, {true, {4, 4, kLoad, 0, w}},
        {true, {4, 4, kNoload, 0, w}}, {true, {4, 4, kAlloc, 0, w}}, {true, {4, 4, kInplace, 0, w}},
        {true, {2, 4, kAllocBranch, 0, w}}, {true, {2, 4, kLoadBranch, 0, w}}, {true, {2, 4, kAllocSleep, 0, w}},
        {true, {4, 4, kAllocBranch, 0, w}}, {true, {2, 4, kAllocTrap, 0, w}}, {true, {4, 4, kAllocTrap, 0, w}},
    };
    for (const Line& l : lines) {
      const int family = l.k.source == kNoload ? 1 : l.k.source == kL2 ? 2 : 0;
      const uint32_t expect =
          is_copy(l.k.source) ? want_copy[l.k.source == kCopyRow0 ? 1 : 0] : want[l.convert][family];
      const int32_t* sl = l.k.source == kL2 ? d_slots_l2 : d_slots;
      const int rc = l.convert ? run_line<true>(kSources, d_rows, sl, sms, num_stages, l.k, expect, d_sum, d_waited)
                               : run_line<false>(kSources, d_rows, sl, sms, num_stages, l.k, expect, d_sum, d_waited);
      if (rc) return rc;
    }
  }
  return 0;
}
