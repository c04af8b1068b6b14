// Micro-benchmark: how long a 16 KB result written by one SM takes to reach another SM's registers,
// by the split rows' meeting (stores, barrier, fence, counter, acquire poll, barrier, loads) and by
// polling the data itself (no fence, no counter; an all-zero 16-byte chunk means "not written yet").
// Two CTAs on two SMs pass the result back and forth; one way = round trip / 2, in SM cycles. With
// --load the other SMs stream reads from DRAM meanwhile, as the long rows' CTAs do in a launch.
//
//   cmake --build build --target mlakit_micro_handoff   (configured with -DMLAKIT_BUILD_LAB=ON)
//   build/lab/handoff [--idle | --load]   (both by default)
//
// Evidence for docs/knowledge/splits-and-merges.md (in isolation the
// poll wins; inside the DSA kernel it did not: dsa_decode_v2_fused devlog step 33).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "kernels/common/async_pipe.cuh"  // ld_acquire_gpu (the kernels' poll)

#include "micro.h"

namespace {

using mlakit::kernels::ld_acquire_gpu;

constexpr int kThreads = 256;
constexpr int kChunks = 1024;  // 16 KB in 16-byte chunks: one 16-head bf16 partial
constexpr int kPerThread = kChunks / kThreads;
constexpr int kIters = 64;

enum Mode { kCounter = 0, kPoll = 1, kFlag = 2 };

struct Args {
  uint4* data;       // [kIters][2][kChunks], zero
  uint32_t* cnt;     // [2], zero
  uint32_t* stop;    // zero
  long long* rtt;    // [kIters]: side 0's round trips
  long long* parts;  // [kIters][4]: fence (side 0 sending), seen->loaded (side 1 receiving)
  const uint4* stream;
  size_t stream_chunks;
  uint32_t* sink;
};

__device__ __forceinline__ void st_release(uint32_t* p, uint32_t v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ uint4 ld_relaxed(const uint4* p) {
  uint4 v;
  asm volatile("ld.relaxed.gpu.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p)
               : "memory");
  return v;
}
__device__ __forceinline__ void st_relaxed(uint4* p, uint4 v) {
  asm volatile("st.relaxed.gpu.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z),
               "r"(v.w)
               : "memory");
}
__device__ __forceinline__ uint4 ld_stream(const uint4* p) {
  uint64_t policy;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p), "l"(policy));
  return v;
}

template <int M>
__device__ void send(const Args& a, uint4* buf, uint32_t* cnt, int it, long long* fence_cycles) {
  if (M != kFlag) {
    for (int k = 0; k < kPerThread; ++k) {
      const int c = threadIdx.x + k * kThreads;
      const uint4 v{uint32_t(it + 1), uint32_t(c + 1), 1u, 1u};  // never all zero
      if (M == kPoll) st_relaxed(buf + c, v);
      else buf[c] = v;
    }
  }
  if (M == kCounter) {
    __syncthreads();
    if (threadIdx.x == 0) {
      const long long t = clock64();
      __threadfence();
      atomicAdd(cnt, 1u);  // result unused: a fire-and-forget red
      if (fence_cycles) *fence_cycles = clock64() - t;
    }
  } else if (M == kFlag) {
    if (threadIdx.x == 0) st_release(cnt, uint32_t(it + 1));
  }
}

template <int M>
__device__ uint32_t receive(const Args& a, const uint4* buf, const uint32_t* cnt, int it, long long* load_cycles) {
  uint32_t acc = 0;
  if (M == kFlag) {
    if (threadIdx.x == 0)
      while (ld_acquire_gpu(cnt) < uint32_t(it + 1)) {
      }
    __syncthreads();
    return acc;
  }
  long long t = 0;
  if (M == kCounter) {
    if (threadIdx.x == 0) {
      while (ld_acquire_gpu(cnt) < uint32_t(it + 1)) {
      }
      __threadfence();
      t = clock64();
    }
    __syncthreads();
    uint4 x[kPerThread];
#pragma unroll
    for (int k = 0; k < kPerThread; ++k) x[k] = buf[threadIdx.x + k * kThreads];
#pragma unroll
    for (int k = 0; k < kPerThread; ++k) acc += x[k].x ^ x[k].y ^ x[k].z ^ x[k].w;
  } else {
    if (threadIdx.x == 0) t = clock64();
#pragma unroll
    for (int k = 0; k < kPerThread; ++k) {
      uint4 x;
      do x = ld_relaxed(buf + threadIdx.x + k * kThreads);
      while ((x.x | x.y | x.z | x.w) == 0u);
      acc += x.x ^ x.y ^ x.z ^ x.w;
    }
  }
  __syncthreads();
  if (threadIdx.x == 0 && load_cycles) *load_cycles = clock64() - t;
  return acc;
}

template <int M>
__global__ void __launch_bounds__(kThreads) pingpong(Args a) {
  const int side = blockIdx.x;
  uint32_t acc = 0;
  if (side >= 2) {  // background: stream reads until side 0 is done
    for (size_t i = (size_t(blockIdx.x) * kThreads + threadIdx.x) % a.stream_chunks;;) {
      for (int k = 0; k < 64; ++k) {
        const uint4 v = ld_stream(a.stream + i);
        acc += v.x;
        i += size_t(gridDim.x) * kThreads;
        if (i >= a.stream_chunks) i -= a.stream_chunks;
      }
      if (*reinterpret_cast<volatile uint32_t*>(a.stop) != 0) break;
    }
  } else {
    for (int it = 0; it < kIters; ++it) {
      const long long t0 = clock64();
      for (int dir = 0; dir < 2; ++dir) {
        uint4* buf = a.data + (size_t(it) * 2 + dir) * kChunks;
        long long* part = a.parts + it * 4 + dir * 2;
        if ((dir == 0) == (side == 0)) send<M>(a, buf, a.cnt + dir, it, side == 0 ? part : nullptr);
        else acc += receive<M>(a, buf, a.cnt + dir, it, side == 1 ? part + 1 : nullptr);
      }
      if (side == 0 && threadIdx.x == 0) a.rtt[it] = clock64() - t0;
    }
    if (side == 0 && threadIdx.x == 0) atomicExch(a.stop, 1u);
  }
  if (acc == 0x9e3779b9u) *a.sink = acc;
}

template <int M>
int run(const char* name, bool load, Args a, int sms, size_t smem) {
  MICRO_CHECK(cudaMemset(a.data, 0, size_t(kIters) * 2 * kChunks * sizeof(uint4)));
  MICRO_CHECK(cudaMemset(a.cnt, 0, 2 * sizeof(uint32_t)));
  MICRO_CHECK(cudaMemset(a.stop, 0, sizeof(uint32_t)));
  MICRO_CHECK(cudaMemset(a.parts, 0, kIters * 4 * sizeof(long long)));
  MICRO_CHECK(cudaFuncSetAttribute(pingpong<M>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  void* params[] = {&a};
  MICRO_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(pingpong<M>), dim3(load ? sms : 2),
                                          dim3(kThreads), params, smem, nullptr));
  MICRO_CHECK(cudaDeviceSynchronize());
  std::vector<long long> rtt(kIters), parts(kIters * 4);
  MICRO_CHECK(cudaMemcpy(rtt.data(), a.rtt, kIters * sizeof(long long), cudaMemcpyDeviceToHost));
  MICRO_CHECK(cudaMemcpy(parts.data(), a.parts, parts.size() * sizeof(long long), cudaMemcpyDeviceToHost));
  std::vector<long long> warm(rtt.begin() + 1, rtt.end()), fence, loads;
  for (int it = 1; it < kIters; ++it) {
    fence.push_back(parts[it * 4 + 0]);
    loads.push_back(parts[it * 4 + 1]);
  }
  std::printf("%-8s %-6s one way: first %6lld  median %6lld cycles", name, load ? "load" : "idle", rtt[0] / 2,
              median(warm) / 2);
  if (M == kCounter) std::printf("  | sender's fence + red %5lld, receiver seen -> loaded %5lld", median(fence), median(loads));
  if (M == kPoll) std::printf("  | receiver's polls until all landed %5lld", median(loads));
  std::printf("\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  bool load_only = false, idle_only = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--load")) load_only = true;
    else if (!std::strcmp(argv[i], "--idle")) idle_only = true;
  }
  cudaDeviceProp prop{};
  MICRO_CHECK(cudaGetDeviceProperties(&prop, 0));
  int clock_khz = 0;
  MICRO_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  std::printf("%s, %d SMs, %.0f MHz (max); one 16 KB result per hand-off, %d threads a side\n", prop.name,
              prop.multiProcessorCount, clock_khz / 1e3, kThreads);
  Args a{};
  const size_t stream_bytes = size_t(2) << 30;
  MICRO_CHECK(cudaMalloc(&a.data, size_t(kIters) * 2 * kChunks * sizeof(uint4)));
  MICRO_CHECK(cudaMalloc(&a.cnt, 2 * sizeof(uint32_t)));
  MICRO_CHECK(cudaMalloc(&a.stop, sizeof(uint32_t)));
  MICRO_CHECK(cudaMalloc(&a.rtt, kIters * sizeof(long long)));
  MICRO_CHECK(cudaMalloc(&a.parts, kIters * 4 * sizeof(long long)));
  MICRO_CHECK(cudaMalloc(&a.sink, sizeof(uint32_t)));
  uint4* stream = nullptr;
  MICRO_CHECK(cudaMalloc(&stream, stream_bytes));
  MICRO_CHECK(cudaMemset(stream, 1, stream_bytes));
  a.stream = stream;
  a.stream_chunks = stream_bytes / sizeof(uint4);
  const size_t smem = 120 * 1024;  // one CTA per SM
  for (int pass = 0; pass < 2; ++pass) {
    const bool load = pass == 1;
    if ((load && idle_only) || (!load && load_only)) continue;
    if (run<kFlag>("flag", load, a, prop.multiProcessorCount, smem)) return 1;
    if (run<kCounter>("counter", load, a, prop.multiProcessorCount, smem)) return 1;
    if (run<kPoll>("poll", load, a, prop.multiProcessorCount, smem)) return 1;
  }
  return 0;
}
