// DeepSeek-V3.2 sparse attention (DSA) decode: the problem, the tensors and the plan-then-run
// entry points (a tiling is named by its kernel: mlakit/plan.h). Host-only types; no CuTe, no CUDA device code.
//
// Semantics (docs/dsa-contract.md): per token t and head h, over the multiset S of valid slots of
// sparse_indices[t, :] (valid = 0 <= idx < num_pages * page_size; -1 is padding anywhere),
//   s_j = sm_scale * (q_nope[t,h] . ckv[j] + q_pe[t,h] . kpe[j])
//   lse[t,h] = log2(sum_j exp(s_j)),  output[t,h] = sum_j softmax(s)_j ckv[j]   (bf16)
// and an empty S gives output 0 and lse = -inf. Out-of-range indices are treated as padding;
// dsa_check_indices() reports them. With the FP8 cache (DsaKv::kFp8) ckv[j] and kpe[j] are the
// dequantized values of slot j's 656-byte row (mlakit/dsa_fp8.h): exactly representable in bf16.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include <cuda_runtime_api.h>

#include "mlakit/plan.h"
#include "mlakit/status.h"

namespace mlakit {

// How the cache stores a slot.
enum class DsaKv : int {
  kBf16 = 0,  // ckv_cache (512 bf16) and kpe_cache (64 bf16)
  kFp8 = 1,   // kv_cache: DeepSeek-V3.2's 656-byte rows, 512 e4m3 | 4 fp32 scales | 64 bf16 (dsa_fp8.h)
};

struct DsaProblem {
  int num_tokens = 1;      // T
  int num_heads = 16;      // query heads on this GPU (16 = 128 / TP-8)
  int head_dim_ckv = 512;  // latent width: K and V at once
  int head_dim_kpe = 64;   // rope key width
  int num_pages = 1;
  int page_size = 64;
  int topk = 2048;         // columns of sparse_indices
  DsaKv kv = DsaKv::kBf16;  // the cache format

  int64_t num_slots() const { return int64_t(num_pages) * page_size; }
  // Checks ranges and the constants a kernel family supports; names the offending field.
  Status validate() const;
  // "T=8 H=16 ckv=512 kpe=64 pages=8462 ps=64 topk=2048", then " kv=fp8" for the FP8 cache.
  std::string to_string() const;
  // Every field counts, a field added later included; std::hash<DsaProblem> agrees with it.
  bool operator==(const DsaProblem&) const = default;
};

// Device pointers. Innermost dimensions are contiguous; the strides (in elements) of the outer
// dimensions may be set for views (0 means "contiguous"). Every row start must be 16-byte aligned.
// A bf16 problem reads ckv_cache and kpe_cache (kv_cache must be null); an FP8 problem reads
// kv_cache (ckv_cache and kpe_cache must be null).
struct DsaTensors {
  const void* q_nope = nullptr;             // bf16 [T, H, ckv]
  const void* q_pe = nullptr;               // bf16 [T, H, kpe]
  const void* ckv_cache = nullptr;          // bf16 [num_pages, page_size, ckv]
  const void* kpe_cache = nullptr;          // bf16 [num_pages, page_size, kpe]
  const void* kv_cache = nullptr;           // FP8: uint8 [num_pages, page_size, 656], rows contiguous
  const int32_t* sparse_indices = nullptr;  // int32 [T, topk], flat slot or -1
  void* output = nullptr;                   // bf16 [T, H, ckv], contiguous
  float* lse = nullptr;                     // fp32 [T, H], contiguous, base 2
  // fp32 [H] or null: FlashMLA's attention sink, a logit per head (natural log) whose value row is
  // zero: out = sum_j e^(s_j) v_j / (sum_j e^(s_j) + e^(sink[h])), normalised once in fp32. The lse
  // stays that of the real logits.
  const float* attn_sink = nullptr;
  // Null: the arrival counters of split rows are the workspace's first 4 KB. Else a separate 4 KB
  // region, zero before the first call, that every call leaves zero: for a call captured into a
  // CUDA graph whose workspace comes from the graph's memory pool (which lends it to other nodes
  // between replays), counters that outlive the graph spare the graph a memset node.
  uint32_t* counters = nullptr;
  float sm_scale = 0.f;

  int64_t q_nope_stride_t = 0, q_nope_stride_h = 0;
  int64_t q_pe_stride_t = 0, q_pe_stride_h = 0;
  int64_t ckv_stride_slot = 0, kpe_stride_slot = 0;
  int64_t indices_stride_t = 0;
  // FP8: bytes from one page to the next (0 = page_size * 656; FlashMLA's caches pad each page by
  // one row: (page_size + 1) * 656). A multiple of 16.
  int64_t kv_stride_page = 0;
};

// A problem bound to one registered kernel, one tiling and a workspace size on one device
// (mlakit/plan.h); only dsa_plan makes a non-empty one.
using DsaPlan = Plan<DsaProblem>;

struct DeviceFacts;

struct DsaPlanOptions {
  std::string kernel_key;  // empty = the registry's default for the problem (op, dtype, heads)
  // A tiling by name in the kernel's own grammar ("s16n64x2m4" for v1_splitk, "s8n64x4m1p4" for
  // v2_fused; `mlakit list` and each variant's page name its fields); empty = the tuned choice if
  // cached, else the kernel's default.
  std::string tiling;
  int device = -1;                    // -1 = current device
  // Plan for these facts instead of a live device (mlakit/device.h: known_devices()): checks a
  // problem and a tiling without a GPU. Such a plan has device() == -1 and never runs.
  const DeviceFacts* device_facts = nullptr;
};

// Validates the problem, picks the kernel (options.kernel_key or the default), passes the arch
// gate for the device, chooses the tiling (given, tuned, or the kernel's default) and checks it,
// once, and sizes the workspace. Errors name the field or the rule that failed.
Status dsa_plan(const DsaProblem& problem, const DsaPlanOptions& options, DsaPlan* plan);

// Validates the tensors (null pointers, alignment, strides), checks that the current device is the
// planned one (or the same chip) and launches on `stream`; the plan's tiling is not checked again.
// Asynchronous; never synchronizes; never allocates. `workspace` must hold
// plan.workspace_bytes() (may be null when that is 0) and be zero-filled when first allocated
// (cudaMemset): single-launch kernels count the arriving CTAs of a row in its first 4 KB, which
// every DSA kernel leaves zero after every call, so a workspace is zeroed once and reused for any
// plan and any shape (with tensors.counters set, those counters are that region, and the workspace
// needs no zeroing). A call that fails mid-kernel (a device fault) leaves it undefined: zero it
// again.
Status dsa_run(const DsaPlan& plan, const DsaTensors& tensors, void* workspace,
               size_t workspace_bytes, cudaStream_t stream);

// Checked mode: counts indices that are neither -1 nor a slot of the cache (< -1 or >=
// num_slots). Synchronizes `stream`. Returns kInvalidArgument naming the first bad one.
Status dsa_check_indices(const DsaProblem& problem, const int32_t* sparse_indices,
                         int64_t indices_stride_t, cudaStream_t stream);

}  // namespace mlakit

// Hash of every field of a DsaProblem (its object bytes; see src/base/hash.h): plan caches key on it.
template <>
struct std::hash<mlakit::DsaProblem> {
  size_t operator()(const mlakit::DsaProblem& problem) const noexcept;
};
