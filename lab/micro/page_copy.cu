// Micro-benchmark: what it costs one SM to gather R cache rows (576 bf16 = 1152 bytes each, the
// combined [pages][64][576] layout of the DSA and MLA caches) into shared memory, by
//   rows-scattered  one cp.async.bulk per row, rows anywhere in the cache (a sparse top-k pick);
//   rows-in-pages   one cp.async.bulk per row, the rows consecutive slots of R / 64 pages (the
//                   DSA contest's short rows: whole sequences, page by page);
//   page-boxes      tensor-map boxes of 64 dims x min(R, 64) rows in the 128-byte swizzle, nine
//                   per 64 rows (the layout wgmma and a swizzle-aware ldmatrix read);
//   page-bulk       one cp.async.bulk per page run (R x 1152 contiguous bytes; dense rows, which
//                   the 16-head consumers' ldmatrix would read with 8-way bank conflicts);
//   padded-boxes-E  one tensor-map box per page run over the cache viewed as (E elements, 576 / E
//                   blocks, rows), E = 8, 24 or 72, the box one block wider than a row: the block
//                   past the row is out of bounds and lands as zeros, so the rows land padded
//                   (pitch 584, 600 or 648 elements: 16, 48 or 16 bytes modulo 128, each free of
//                   ldmatrix bank conflicts) from one request per run. CTA 0's rows are checked
//                   against the cache (a pattern) for these and the per-row modes.
// The per-row modes are issued by two warps, each half of the rows (the DSA kernels' producers),
// the others by one thread. One CTA per SM on every SM (or on the first N: `page_copy N`; one
// CTA is a lone short row's case), the L2 flushed (256 MB written) before each launch. Per
// launch: each CTA's cycles from its start to the last request issued and to the rows landed (its
// mbarrier phase); printed: the medians over 30 launches of the median and the slowest CTA, and
// of the launch's event time.
//
//   cmake --build build --target mlakit_micro_page_copy   (configured with -DMLAKIT_BUILD_LAB=ON)
//   build/lab/page_copy [CTAs]
//
// Evidence for docs/kernels/dsa_decode_v2_fused.md, "What to try next" (page-granular copies).
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "kernels/common/async_pipe.cuh"
#include "kernels/common/tensor_map.h"

#include "micro.h"

namespace {

using namespace mlakit::kernels;

constexpr int kThreads = 256;
constexpr int kDim = 576, kDimV = 512, kPageRows = 64;
constexpr int kRowBytes = kDim * 2;          // 1152
constexpr int kPitchBytes = kRowBytes + 16;  // the kernels' padded shared-memory row
constexpr int kMaxRows = 128;
constexpr int kPages = 8462;  // the contest's cache: 623 MB
constexpr int kLaunches = 30;

enum Mode { kRowsScattered, kRowsInPages, kPageBoxes, kPageBulk, kPadded8, kPadded24, kPadded72, kModes };
const char* const kModeNames[kModes] = {"rows-scattered", "rows-in-pages",   "page-boxes",     "page-bulk",
                                        "padded-boxes-8", "padded-boxes-24", "padded-boxes-72"};

// The padded modes' block width E (elements) and every mode's shared-memory row pitch (bytes; 0:
// not rows of one pitch).
__host__ __device__ constexpr int padded_elems(int m) {
  return m == kPadded8 ? 8 : m == kPadded24 ? 24 : m == kPadded72 ? 72 : 0;
}
__host__ __device__ constexpr int pitch_bytes(int m) {
  if (padded_elems(m) > 0) return (kDim + padded_elems(m)) * 2;
  return m == kRowsScattered || m == kRowsInPages ? kPitchBytes : 0;
}
constexpr int kMaxPitchBytes = (kDim + 72) * 2;

struct Args {
  const uint16_t* cache;
  const int* rows;  // [ctas][kMaxRows]: global row ids (page * 64 + slot)
  int nrows;
  long long* issue;  // [ctas]
  long long* land;   // [ctas]
  TensorMapBytes ckv_map, kpe_map;
  TensorMapBytes pad_map;  // the padded mode being run
  uint16_t* dump;          // when set: CTA 0's landed rows, nrows x pitch_bytes(M)
};

template <int M>
__global__ void __launch_bounds__(kThreads, 1) gather(const __grid_constant__ Args a) {
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  // The boxes' 128-byte swizzle needs 1024-byte-aligned destinations (the launch adds the slack).
  uint8_t* smem = smem_raw + ((1024 - smem_addr(smem_raw) % 1024) % 1024);
  __shared__ uint64_t bar;
  __shared__ long long issued[2];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int* rows = a.rows + blockIdx.x * kMaxRows;
  const uint64_t policy = l2_policy(L2Evict::kFirst);
  if (threadIdx.x == 0) {
    mbar_init(&bar, 1);
    mbar_fence_init();
    // A box's bytes count in full, the out-of-bounds block's zeros too.
    mbar_arrive_expect_tx(&bar, uint32_t(a.nrows) * (padded_elems(M) > 0 ? pitch_bytes(M) : kRowBytes));
  }
  __syncthreads();
  const long long t0 = clock64();
  if constexpr (M == kRowsScattered || M == kRowsInPages) {
    if (warp < 2) {
      const int half = a.nrows / 2;
      for (int i = lane; i < half; i += 32) {
        const int r = warp * half + i;
        bulk_copy_g2s(smem + r * kPitchBytes, a.cache + int64_t(rows[r]) * kDim, kRowBytes, &bar, policy);
      }
      if (lane == 0) issued[warp] = clock64() - t0;
    }
  } else if (threadIdx.x == 0) {
    const int box_rows = a.nrows < kPageRows ? a.nrows : kPageRows;
    for (int r0 = 0; r0 < a.nrows; r0 += box_rows) {
      const int page = rows[r0] / kPageRows, slot = rows[r0] % kPageRows;
      if constexpr (padded_elems(M) > 0) {
        tma_load_3d(smem + r0 * pitch_bytes(M), &a.pad_map, 0, 0, rows[r0], &bar, policy);
      } else if constexpr (M == kPageBoxes) {
        uint8_t* dst = smem + (r0 / box_rows) * 9 * box_rows * 128;
        for (int k = 0; k < kDimV / 64; ++k)
          tma_load_3d(dst + k * box_rows * 128, &a.ckv_map, 64 * k, slot, page, &bar, policy);
        tma_load_3d(dst + 8 * box_rows * 128, &a.kpe_map, 0, slot, page, &bar, policy);
      } else {
        bulk_copy_g2s(smem + r0 * kRowBytes, a.cache + int64_t(rows[r0]) * kDim, uint32_t(box_rows) * kRowBytes, &bar,
                      policy);
      }
    }
    issued[0] = issued[1] = clock64() - t0;
  }
  if (threadIdx.x == 0) {
    mbar_wait(&bar, 0);
    a.land[blockIdx.x] = clock64() - t0;
  }
  __syncthreads();
  if (threadIdx.x == 0) a.issue[blockIdx.x] = issued[0] > issued[1] ? issued[0] : issued[1];
  if constexpr (pitch_bytes(M) > 0)
    if (a.dump != nullptr && blockIdx.x == 0)
      for (int i = threadIdx.x; i < a.nrows * pitch_bytes(M) / 2; i += kThreads)
        a.dump[i] = reinterpret_cast<const uint16_t*>(smem)[i];
}

// The cache's pattern: element c of global row r.
__host__ __device__ inline uint16_t pattern(int64_t r, int c) { return uint16_t((r * 577 + c) % 65521 + 1); }

__global__ void fill_pattern(uint16_t* cache, int64_t elems) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < elems; i += int64_t(gridDim.x) * blockDim.x)
    cache[i] = pattern(i / kDim, int(i % kDim));
}

template <int M>
int run(int nrows, const Args& base, int ctas, void* flush, size_t flush_bytes, int smem_bytes) {
  auto kernel = gather<M>;
  MICRO_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes));
  Args a = base;
  a.nrows = nrows;
  std::vector<long long> med_land, max_land, med_issue, event_ns;
  std::vector<long long> land(ctas), issue(ctas);
  cudaEvent_t e0, e1;
  MICRO_CHECK(cudaEventCreate(&e0));
  MICRO_CHECK(cudaEventCreate(&e1));
  for (int it = 0; it < kLaunches + 2; ++it) {
    MICRO_CHECK(cudaMemsetAsync(flush, it & 0xff, flush_bytes));
    MICRO_CHECK(cudaEventRecord(e0));
    kernel<<<ctas, kThreads, smem_bytes>>>(a);
    MICRO_CHECK(cudaEventRecord(e1));
    MICRO_CHECK(cudaGetLastError());
    MICRO_CHECK(cudaEventSynchronize(e1));
    if (it < 2) continue;  // warm-up
    float ms = 0;
    MICRO_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    MICRO_CHECK(cudaMemcpy(land.data(), a.land, ctas * sizeof(long long), cudaMemcpyDeviceToHost));
    MICRO_CHECK(cudaMemcpy(issue.data(), a.issue, ctas * sizeof(long long), cudaMemcpyDeviceToHost));
    med_land.push_back(median(land));
    max_land.push_back(*std::max_element(land.begin(), land.end()));
    med_issue.push_back(median(issue));
    event_ns.push_back(static_cast<long long>(ms * 1e6));
  }
  const char* check = "";
  if constexpr (pitch_bytes(M) > 0) {
    // One more launch with CTA 0's rows dumped: every row's 576 elements from the cache, and the
    // padded modes' pad zeros (the per-row modes leave their 8 pad elements unwritten).
    constexpr int kPitch = pitch_bytes(M) / 2;
    uint16_t* dump = nullptr;
    MICRO_CHECK(cudaMalloc(&dump, size_t(nrows) * kPitch * 2));
    a.dump = dump;
    kernel<<<ctas, kThreads, smem_bytes>>>(a);
    MICRO_CHECK(cudaGetLastError());
    MICRO_CHECK(cudaDeviceSynchronize());
    std::vector<uint16_t> got(size_t(nrows) * kPitch);
    std::vector<int> ids(nrows);
    MICRO_CHECK(cudaMemcpy(got.data(), dump, got.size() * 2, cudaMemcpyDeviceToHost));
    MICRO_CHECK(cudaMemcpy(ids.data(), a.rows, nrows * sizeof(int), cudaMemcpyDeviceToHost));
    MICRO_CHECK(cudaFree(dump));
    int bad = 0;
    for (int r = 0; r < nrows; ++r)
      for (int c = 0; c < (padded_elems(M) > 0 ? kPitch : kDim); ++c)
        bad += got[size_t(r) * kPitch + c] != (c < kDim ? pattern(ids[r], c) : uint16_t(0));
    check = bad == 0 ? "  rows checked" : "  ROWS WRONG";
    if (bad != 0) std::fprintf(stderr, "%s, %d rows: %d elements differ from the cache\n", kModeNames[M], nrows, bad);
  }
  std::printf("%4d rows  %-15s issued %6lld  landed: median CTA %6lld, slowest %6lld cycles  | event %6.2f us%s\n",
              nrows, kModeNames[M], median(med_issue), median(med_land), median(max_land), median(event_ns) / 1e3,
              check);
  return 0;
}

// run<M> of every mode, indexed by mode.
template <size_t... M>
constexpr auto runs_of(std::index_sequence<M...>) {
  return std::array{&run<int(M)>...};
}
constexpr auto kRuns = runs_of(std::make_index_sequence<kModes>{});

// The cache viewed as (E elements, 576 / E blocks, rows) and a box of (E, 576 / E + 1, box_rows)
// with no swizzle: one row's blocks plus one out of bounds, which lands as zeros.
bool encode_padded(const uint16_t* cache, int e, int box_rows, TensorMapBytes* out) {
  using Encode = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                              const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                              CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found) !=
          cudaSuccess ||
      found != cudaDriverEntryPointSuccess)
    return false;
  const cuuint64_t dims[3] = {cuuint64_t(e), cuuint64_t(kDim / e), cuuint64_t(kPages) * kPageRows};
  const cuuint64_t strides[2] = {cuuint64_t(e) * 2, cuuint64_t(kRowBytes)};
  const cuuint32_t box[3] = {cuuint32_t(e), cuuint32_t(kDim / e + 1), cuuint32_t(box_rows)};
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  CUtensorMap map;
  const CUresult rc = reinterpret_cast<Encode>(fn)(
      &map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, const_cast<uint16_t*>(cache), dims, strides, box, elem_strides,
      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (rc != CUDA_SUCCESS) return false;
  static_assert(sizeof map == sizeof *out, "TensorMapBytes mirrors CUtensorMap");
  std::memcpy(out, &map, sizeof map);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  cudaDeviceProp prop{};
  MICRO_CHECK(cudaGetDeviceProperties(&prop, 0));
  // argv[1]: the CTAs that gather (at most one per SM; default every SM). One CTA is a T = 1
  // short row's situation: nothing else pulls from memory.
  const int ctas = argc > 1 ? std::clamp(std::atoi(argv[1]), 1, prop.multiProcessorCount) : prop.multiProcessorCount;
  std::printf("%s, %d SMs; %d CTAs (at most one per SM), cache of %d pages x 64 rows x 1152 B, L2 flushed per launch\n",
              prop.name, prop.multiProcessorCount, ctas, kPages);
  uint16_t* cache = nullptr;
  int* rows = nullptr;
  long long *issue = nullptr, *land = nullptr;
  void* flush = nullptr;
  const size_t cache_bytes = size_t(kPages) * kPageRows * kRowBytes, flush_bytes = size_t(256) << 20;
  MICRO_CHECK(cudaMalloc(&cache, cache_bytes));
  fill_pattern<<<1024, 256>>>(cache, int64_t(cache_bytes / 2));
  MICRO_CHECK(cudaGetLastError());
  MICRO_CHECK(cudaMalloc(&rows, size_t(ctas) * kMaxRows * sizeof(int)));
  MICRO_CHECK(cudaMalloc(&issue, ctas * sizeof(long long)));
  MICRO_CHECK(cudaMalloc(&land, ctas * sizeof(long long)));
  MICRO_CHECK(cudaMalloc(&flush, flush_bytes));
  Args a{};
  a.cache = cache;
  a.rows = rows;
  a.issue = issue;
  a.land = land;
  const PagedRows ckv{cache, kDimV, kPageRows, kPages, kDim, int64_t(kPageRows) * kDim, 64, kPageRows};
  const PagedRows kpe{cache + kDimV, kDim - kDimV, kPageRows, kPages, kDim, int64_t(kPageRows) * kDim, 64, kPageRows};
  std::mt19937 rng(12345);
  const int smem_rows = kMaxRows * kMaxPitchBytes + 1024;
  for (int nrows : {16, 32, 64, 128}) {
    // Box rows are part of a tensor map: min(nrows, 64).
    PagedRows c = ckv, k = kpe;
    c.box_rows = k.box_rows = std::min(nrows, kPageRows);
    if (!encode_paged_rows(c, &a.ckv_map) || !encode_paged_rows(k, &a.kpe_map)) {
      std::fprintf(stderr, "tensor maps could not be encoded\n");
      return 1;
    }
    TensorMapBytes padded[3];
    for (int i = 0; i < 3; ++i)
      if (!encode_padded(cache, padded_elems(kPadded8 + i), std::min(nrows, kPageRows), &padded[i])) {
        std::fprintf(stderr, "the padded tensor map (E = %d) could not be encoded\n", padded_elems(kPadded8 + i));
        return 1;
      }
    std::vector<int> host(size_t(ctas) * kMaxRows);
    for (int mode = 0; mode < kModes; ++mode) {
      for (int cta = 0; cta < ctas; ++cta) {
        int* r = host.data() + size_t(cta) * kMaxRows;
        if (mode == kRowsScattered) {
          for (int i = 0; i < nrows; ++i) r[i] = int(rng() % (uint32_t(kPages) * kPageRows));
        } else {  // whole pages (half of one for 32 rows), distinct per CTA
          for (int p = 0; p * kPageRows < nrows; ++p) {
            const int page = int(rng() % kPages);
            for (int i = 0; i < std::min(kPageRows, nrows); ++i) r[p * kPageRows + i] = page * kPageRows + i;
          }
        }
      }
      MICRO_CHECK(cudaMemcpy(rows, host.data(), host.size() * sizeof(int), cudaMemcpyHostToDevice));
      if (padded_elems(mode) > 0) a.pad_map = padded[mode - kPadded8];
      if (const int rc = kRuns[mode](nrows, a, ctas, flush, flush_bytes, smem_rows); rc != 0) return rc;
    }
  }
  return 0;
}
