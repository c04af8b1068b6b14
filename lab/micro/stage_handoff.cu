// Micro-benchmark: how a producer warpgroup that gathers rows into registers and stores them widened
// into shared-memory stages (v2_fp8's 64-head producers) should hand a stage to its consumers. The
// kernel's producers arrive with release semantics, and a release waits for the loads in flight, so
// each warp requests its next stage's rows only after that arrival (FP8 devlog steps 18-19). Modes:
//   release  STS, the proxy fence, mbarrier.arrive (release), then the next stage's loads (the
//            kernel's order);
//   early    the next stage's loads first, then the fence and the releasing arrival (which waits
//            for them);
//   relaxed  as release with a relaxed arrival (formally racy: nothing orders the stores before
//            the consumers' wait; the kernel measured it -4 %, FP8 devlog step 18);
//   async    one relaxed expect_tx and a relaxed arrival per lane, st.async stores that complete the
//            stage's transaction count, then the next stage's loads at once (no release by the
//            thread: each st.async's completion publishes its own bytes). st.async names a
//            shared::cluster address: this mode launches as a cluster of one CTA (without it the
//            first STAS traps with an illegal instruction).
// Every SM runs one CTA: 4 producer warps (a warp pair per stage, every other stage, 4 rows per lane
// group of 8, lane c taking bytes 128 k + 16 c of each row as the kernel, loaded a stage ahead into
// registers) and one consumer warpgroup that waits for each stage, reads it with 16-byte LDS into a
// checksum, spins `work` cycles (the math) and frees it. Rows: 512 bytes gathered at random from a
// 512 MB buffer; a stage is 32 rows, stored widened to 32 KB (each 32-bit word w becomes w and
// w ^ 0x5a5a5a5a, a stand-in for the E4M3 -> bf16 conversion whose cost the kernel measured apart).
// Prints per mode the median of 9 launches in ns per stage per SM and the rows' bytes per second,
// after checking every launch's checksum against the host's.
//
//   cmake --build build --target mlakit_micro_stage_handoff   (configured with -DMLAKIT_BUILD_LAB=ON)
//   build/lab/stage_handoff [--work CYCLES]   (default 0, then 2000: the consumers' pace of a 64-head tile)
//
// Measured (H200; FP8 devlog step 20): release, early and relaxed within 2 % of each other at
// every pace (work 0: 727 / 715 / 718 ns a stage); async 2.6 x slower (1,896 ns; 1,856 at work
// 2000 against 1,481). So the kernel keeps its order; st.async is not the way out. A first version
// with lane c at bytes 64 c + 16 k (each load instruction half-using twice the sectors) moved half
// the bytes: 1,559 ns a stage at work 0.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/common/async_pipe.cuh"
#include "kernels/common/wgmma.cuh"  // fence_async_smem

#include "micro.h"

namespace {

using namespace mlakit::kernels;

constexpr int kStages = 4;                  // ring stages (two per warp pair in flight at most)
constexpr int kStageRows = 32;
constexpr int kRowBytes = 512;              // raw bytes per row
constexpr int kStageBytes = kStageRows * kRowBytes * 2;  // widened: 32 KB
constexpr int kProducerWarps = 4, kConsumerThreads = 128;
constexpr int kThreads = kProducerWarps * 32 + kConsumerThreads;
constexpr int kRowsPerLane = 4;             // a lane group of 8 takes 4 rows of its warp's 16
constexpr int kLoadsPerRow = kRowBytes / 8 / 16;  // 4: a lane's 64 bytes of a row
constexpr uint32_t kMix = 0x5a5a5a5au;
constexpr int64_t kNumRows = int64_t(1) << 20;  // 512 MB of rows: far past the L2

enum Mode { kRelease = 0, kEarly = 1, kAsync = 2, kRelaxed = 3 };
const char* const kModeNames[] = {"release", "early", "async", "relaxed"};

struct Smem {
  uint4 ring[kStages][kStageBytes / 16];
  uint64_t full[kStages], empty[kStages];
};

__device__ __forceinline__ uint4 ld_nc(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}
__device__ __forceinline__ void st_async16(void* dst, const uint4& v, uint64_t* bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, %4}, [%5];"
               ::"r"(smem_addr(dst)), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w), "r"(smem_addr(bar))
               : "memory");
}

// The widened halves of a 16-byte load: words w0 w1 | w0^m w1^m, then w2 w3 | w2^m w3^m.
__device__ __forceinline__ void widen(const uint4& v, uint4& a, uint4& b) {
  a = make_uint4(v.x, v.y, v.x ^ kMix, v.y ^ kMix);
  b = make_uint4(v.z, v.w, v.z ^ kMix, v.w ^ kMix);
}

// Row r of a stage: 1 KB widened, lane c's 128 bytes at 128 c (no swizzle: the consumers read it
// linearly; the kernel's 128-byte swizzle changes the addresses, not the hand-off).
template <Mode M>
__device__ void produce(Smem& s, const uint8_t* rows, const int32_t* slots, int num_stages, int pw) {
  const int lane = threadIdx.x % 32, c = lane % 8;
  const int row0 = (pw % 2 * 4 + lane / 8) * kRowsPerLane;  // the lane's rows: row0 .. row0 + 3
  uint4 x[kRowsPerLane][kLoadsPerRow];
  const auto load = [&](int i) {
    const int4 sl = *reinterpret_cast<const int4*>(slots + i * kStageRows + row0);
    const int32_t slot[4] = {sl.x, sl.y, sl.z, sl.w};
#pragma unroll
    for (int u = 0; u < kRowsPerLane; ++u)
#pragma unroll
      for (int k = 0; k < kLoadsPerRow; ++k) x[u][k] = ld_nc(rows + int64_t(slot[u]) * kRowBytes + 128 * k + 16 * c);
  };
  int i = pw / 2;
  if (i < num_stages) load(i);
  for (; i < num_stages; i += 2) {
    const int b = i % kStages;
    mbar_wait(&s.empty[b], ((i / kStages) & 1) ^ 1);
    uint4* stage = s.ring[b];
    if constexpr (M == kAsync) {
      mbar_expect_tx(&s.full[b], kRowsPerLane * kLoadsPerRow * 32);  // this lane's st.async bytes
      mbar_arrive_relaxed(&s.full[b]);
    }
#pragma unroll
    for (int u = 0; u < kRowsPerLane; ++u) {
      uint4* dst = stage + (row0 + u) * (2 * kRowBytes / 16) + 2 * c;
#pragma unroll
      for (int k = 0; k < kLoadsPerRow; ++k) {
        uint4 a, b2;
        widen(x[u][k], a, b2);
        if constexpr (M == kAsync) {
          st_async16(dst + 16 * k, a, &s.full[b]);
          st_async16(dst + 16 * k + 1, b2, &s.full[b]);
        } else {
          dst[16 * k] = a;
          dst[16 * k + 1] = b2;
        }
      }
    }
    const bool more = i + 2 < num_stages;
    if constexpr (M != kAsync) fence_async_smem();  // as the kernel: wgmma reads the stage
    if constexpr (M == kRelease) {
      mbar_arrive(&s.full[b]);
      if (more) load(i + 2);
    } else if constexpr (M == kEarly) {
      if (more) load(i + 2);
      mbar_arrive(&s.full[b]);
    } else if constexpr (M == kRelaxed) {
      mbar_arrive_relaxed(&s.full[b]);
      if (more) load(i + 2);
    } else {
      if (more) load(i + 2);
    }
  }
}

__device__ void consume(Smem& s, int num_stages, long long work, uint32_t* checksum) {
  const int t = threadIdx.x - kProducerWarps * 32;
  uint32_t sum = 0;
  for (int i = 0; i < num_stages; ++i) {
    const int b = i % kStages;
    mbar_wait(&s.full[b], (i / kStages) & 1);
#pragma unroll 4
    for (int j = t; j < kStageBytes / 16; j += kConsumerThreads) {
      const uint4 v = s.ring[b][j];
      sum += v.x + v.y + v.z + v.w;
    }
    if (work > 0) {
      const long long until = clock64() + work;
      while (clock64() < until) {
      }
    }
    mbar_arrive(&s.empty[b]);
  }
  atomicAdd(checksum, sum);
}

template <Mode M>
__global__ void __launch_bounds__(kThreads, 1)
    handoff_kernel(const uint8_t* rows, const int32_t* slots, int num_stages, long long work, uint32_t* checksum) {
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  Smem& s = *reinterpret_cast<Smem*>(smem_raw);
  if (threadIdx.x == 0) {
    for (int b = 0; b < kStages; ++b) {
      mbar_init(&s.full[b], 64);  // the 64 lanes of a stage's warp pair
      mbar_init(&s.empty[b], kConsumerThreads);
    }
    mbar_fence_init();
  }
  __syncthreads();
  const int32_t* my_slots = slots + int64_t(blockIdx.x) * num_stages * kStageRows;
  const int warp = threadIdx.x / 32;
  if (warp < kProducerWarps)
    produce<M>(s, rows, my_slots, num_stages, warp);
  else
    consume(s, num_stages, work, checksum);
}

// The checksum of every CTA's stages: each row's words w contribute w + (w ^ kMix) (mod 2^32).
uint32_t expected_checksum(const std::vector<uint32_t>& words, const std::vector<int32_t>& slots) {
  std::vector<uint32_t> per_row(kNumRows, 0);
  for (int64_t r = 0; r < kNumRows; ++r)
    for (int w = 0; w < kRowBytes / 4; ++w) {
      const uint32_t v = words[r * (kRowBytes / 4) + w];
      per_row[r] += v + (v ^ kMix);
    }
  uint32_t sum = 0;
  for (const int32_t s : slots) sum += per_row[s];
  return sum;
}

template <Mode M>
int run_mode(const uint8_t* rows, const int32_t* slots, int ctas, int num_stages, long long work, uint32_t want,
             uint32_t* checksum) {
  const int smem = int(sizeof(Smem));
  MICRO_CHECK(cudaFuncSetAttribute(handoff_kernel<M>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  cudaEvent_t a, b;
  MICRO_CHECK(cudaEventCreate(&a));
  MICRO_CHECK(cudaEventCreate(&b));
  std::vector<long long> ns;
  for (int rep = 0; rep < 10; ++rep) {
    MICRO_CHECK(cudaMemset(checksum, 0, sizeof(uint32_t)));
    MICRO_CHECK(cudaEventRecord(a));
    // st.async names a shared::cluster address: the async mode launches as a cluster of one CTA.
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(ctas);
    cfg.blockDim = dim3(kThreads);
    cfg.dynamicSmemBytes = smem;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = 1;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = M == kAsync ? 1 : 0;
    MICRO_CHECK(cudaLaunchKernelEx(&cfg, handoff_kernel<M>, rows, slots, num_stages, work, checksum));
    MICRO_CHECK(cudaEventRecord(b));
    uint32_t got = 0;
    if (finish_and_read(b, checksum, got)) return 1;
    if (got != want) {
      std::fprintf(stderr, "%s: checksum %08x, expected %08x (a stage read before its stores landed)\n",
                   kModeNames[M], got, want);
      return 1;
    }
    float ms = 0;
    MICRO_CHECK(cudaEventElapsedTime(&ms, a, b));
    if (rep > 0) ns.push_back((long long)(ms * 1e6));  // the first launch warms the code
  }
  const long long t = median(ns);
  const double bytes = double(ctas) * num_stages * kStageRows * kRowBytes;
  std::printf("%-8s work %5lld cycles: %7.1f ns per stage per SM, %6.0f GB/s of rows (median of %zu)\n",
              kModeNames[M], work, double(t) / num_stages, bytes / double(t), ns.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<long long> works = {0, 2000};
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--work") == 0 && i + 1 < argc) {
      works = {std::atoll(argv[++i])};
    } else {
      std::fprintf(stderr, "usage: %s [--work CYCLES]\n", argv[0]);
      return 2;
    }
  }
  int sms = 0;
  MICRO_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int num_stages = 256;  // 8,192 rows (4 MB) per SM
  std::mt19937_64 rng(7);
  std::vector<uint32_t> words(size_t(kNumRows) * kRowBytes / 4);
  for (auto& w : words) w = uint32_t(rng());
  std::vector<int32_t> slots(size_t(sms) * num_stages * kStageRows);
  std::uniform_int_distribution<int32_t> pick(0, int32_t(kNumRows - 1));
  for (auto& s : slots) s = pick(rng);
  const uint32_t want = expected_checksum(words, slots);
  uint8_t* d_rows = nullptr;
  int32_t* d_slots = nullptr;
  uint32_t* d_sum = nullptr;
  MICRO_CHECK(cudaMalloc(&d_rows, words.size() * sizeof(uint32_t)));
  MICRO_CHECK(cudaMalloc(&d_slots, slots.size() * sizeof(int32_t)));
  MICRO_CHECK(cudaMalloc(&d_sum, sizeof(uint32_t)));
  MICRO_CHECK(cudaMemcpy(d_rows, words.data(), words.size() * sizeof(uint32_t), cudaMemcpyHostToDevice));
  MICRO_CHECK(cudaMemcpy(d_slots, slots.data(), slots.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
  std::printf("%d SMs, one CTA each, %d stages of %d rows of %d bytes per CTA\n", sms, num_stages, kStageRows,
              kRowBytes);
  for (const long long work : works) {
    if (run_mode<kRelease>(d_rows, d_slots, sms, num_stages, work, want, d_sum)) return 1;
    if (run_mode<kEarly>(d_rows, d_slots, sms, num_stages, work, want, d_sum)) return 1;
    if (run_mode<kRelaxed>(d_rows, d_slots, sms, num_stages, work, want, d_sum)) return 1;
    if (run_mode<kAsync>(d_rows, d_slots, sms, num_stages, work, want, d_sum)) return 1;
  }
  return 0;
}
