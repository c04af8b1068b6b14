// Dense paged MLA decode (DeepSeek-V2/V3/R1, Kimi-K2): the problem, the tensors, the tiling and
// the plan-then-run entry points. Host-only types; no CuTe, no CUDA device code.
//
// Semantics (docs/mla-contract.md): request b holds n_b = clamp(cache_seqlens[b], 0,
// max_pages * page_size) cache rows; row j of it is row j % page_size of page
// block_table[b, j / page_size]. Query position i (0 <= i < s_q) of request b sees rows
// [0, n_{b,i}) with n_{b,i} = n_b - (s_q - 1 - i) when causal (0 if that is negative), n_b
// otherwise. For every head h:
//   s_j = sm_scale * (q_nope[b,i,h] . ckv[j] + q_pe[b,i,h] . kpe[j])
//   lse[b,i,h] = log2(sum_j exp(s_j)),  output[b,i,h] = sum_j softmax(s)_j ckv[j]   (bf16)
// and a query that sees no row gets output 0 and lse = -inf. A page id outside [0, num_pages)
// is never dereferenced: its rows read as zeros (a wrong but bounded result; mla_check_inputs
// reports such ids).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include <cuda_runtime_api.h>

#include "mlakit/plan.h"
#include "mlakit/status.h"

namespace mlakit {

struct MlaProblem {
  int batch = 1;           // b: requests
  int seq_q = 1;           // s_q: query tokens per request (1 = decode, 2..4 = speculative)
  int num_heads = 16;      // h_q: query heads on this GPU (one KV head)
  int head_dim_ckv = 512;  // latent width: K and V at once
  int head_dim_kpe = 64;   // rope key width
  int num_pages = 1;       // pages in the cache
  int page_size = 64;      // rows per page
  int max_pages = 1;       // columns of block_table
  int causal = 0;          // 1: query i of a request sees its first n - (s_q - 1 - i) rows

  int64_t num_rows() const { return int64_t(num_pages) * page_size; }
  int64_t max_seqlen() const { return int64_t(max_pages) * page_size; }
  // Checks ranges and the constants a kernel family supports; names the offending field.
  Status validate() const;
  // "b=32 s_q=1 h=16 ckv=512 kpe=64 pages=2048 ps=64 max_pages=64 causal=0"
  std::string to_string() const;
  // Every field counts, a field added later included; std::hash<MlaProblem> agrees with it.
  bool operator==(const MlaProblem&) const = default;
};

// Device pointers. Innermost dimensions are contiguous; the strides (in elements) of the outer
// dimensions may be set for views (0 means "contiguous"). Every row start must be 16-byte
// aligned. The engines' combined layouts are views: q [b, s_q, h, 576] gives q_nope = q and
// q_pe = q + 512 with strides (s_q*h*576, h*576, 576); a cache [num_pages, page_size, 576] gives
// ckv_cache = cache and kpe_cache = cache + 512 with strides (page_size*576, 576).
struct MlaTensors {
  const void* q_nope = nullptr;           // bf16 [b, s_q, h, ckv]
  const void* q_pe = nullptr;             // bf16 [b, s_q, h, kpe]
  const void* ckv_cache = nullptr;        // bf16 [num_pages, page_size, ckv]
  const void* kpe_cache = nullptr;        // bf16 [num_pages, page_size, kpe]
  const int32_t* block_table = nullptr;   // int32 [b, max_pages]
  const int32_t* cache_seqlens = nullptr; // int32 [b], contiguous
  void* output = nullptr;                 // bf16 [b, s_q, h, ckv], contiguous
  float* lse = nullptr;                   // fp32 [b, s_q, h], contiguous, base 2
  uint32_t* counters = nullptr;           // null: the workspace's first 4 KB (DsaTensors::counters)
  float sm_scale = 0.f;

  int64_t q_nope_stride_b = 0, q_nope_stride_s = 0, q_nope_stride_h = 0;
  int64_t q_pe_stride_b = 0, q_pe_stride_s = 0, q_pe_stride_h = 0;
  int64_t ckv_stride_page = 0, ckv_stride_row = 0;
  int64_t kpe_stride_page = 0, kpe_stride_row = 0;
  int64_t block_table_stride_b = 0;
};

using MlaPlan = Plan<MlaProblem>;

struct DeviceFacts;

struct MlaPlanOptions {
  std::string kernel_key;             // empty = the registry's default for (op, dtype, heads)
  // A tiling by name in the kernel's grammar ("c132x4p2", "c132x4p4g3m64o1": the v1_paged page
  // names its fields); empty = the tuned choice if cached, else the kernel's default.
  std::string tiling;
  int device = -1;                    // -1 = current device
  const DeviceFacts* device_facts = nullptr;  // plan without a GPU (never runs)
};

// Validates the problem, picks the kernel, passes the arch gate, chooses and checks the tiling
// once and sizes the workspace. Errors name the field or the rule that failed.
Status mla_plan(const MlaProblem& problem, const MlaPlanOptions& options, MlaPlan* plan);

// Validates the tensors (null pointers, alignment, strides), checks the device and launches on
// `stream`. Asynchronous, never synchronizes, never allocates: the whole call is CUDA-graph
// capturable. `workspace` must hold plan.workspace_bytes() and be zero-filled when first
// allocated: the kernel counts the CTAs of a split request in its first 4 KB and leaves them zero
// after every call, so one workspace serves any plan of the same or fewer CTAs (with
// tensors.counters set, the counters are that region instead). A call that fails mid-kernel
// leaves it undefined: zero it again.
Status mla_run(const MlaPlan& plan, const MlaTensors& tensors, void* workspace, size_t workspace_bytes,
               cudaStream_t stream);

// Checked mode: synchronizes `stream`, copies cache_seqlens and block_table to the host and
// reports (kInvalidArgument) the first seqlen outside [0, max_pages * page_size] or page id
// outside [0, num_pages) among the pages a request uses.
Status mla_check_inputs(const MlaProblem& problem, const int32_t* block_table, int64_t block_table_stride_b,
                        const int32_t* cache_seqlens, cudaStream_t stream);

}  // namespace mlakit

template <>
struct std::hash<mlakit::MlaProblem> {
  size_t operator()(const mlakit::MlaProblem& problem) const noexcept;
};
