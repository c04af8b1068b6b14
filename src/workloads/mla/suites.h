// MLA decode workloads: the suites mla-serving (bandwidth-bound batches, b = 1..256, contexts
// 1k..128k, 16 and 128 heads, s_q 1 and 2, equal and mixed lengths) and mla-edge (where kernels
// break: empty and one-row requests, partial pages, causal s_q = 4, page sizes 1 and 16, caches past
// 4 GiB, page ids outside the cache, clamped lengths, shared pages, separate and combined layouts),
// the one-off shape of `mlakit run`, and the host inputs of a workload (docs/workloads.md).
// Block tables and lengths are synthesized from a seed; q and the cache are randn bf16, and every
// cache row no request uses is NaN.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mlakit/mla.h"

namespace mlakit {

// How q and the cache sit in device memory. kSeparate: q_nope, q_pe, ckv_cache and kpe_cache are
// four contiguous tensors (strides 0). kCombined: the engines' 576-wide buffers, q [b, s_q, h, 576]
// and cache [num_pages, page_size, 576], with the nope and rope parts as strided views of them.
enum class MlaLayout { kSeparate, kCombined };
const char* layout_name(MlaLayout layout);  // "separate", "combined"

struct MlaWorkload {
  std::string name;  // "b32-t4096" / "edge-partial-page"
  MlaProblem problem;
  // DeepSeek-V3's: 1 / sqrt(192) (the unabsorbed q.k width) times the YaRN mscale squared, as in
  // the DSA workloads.
  float sm_scale = 0.1352337788608801f;
  MlaLayout layout = MlaLayout::kCombined;
  std::vector<int32_t> cache_seqlens;  // [b], as given to the kernel (may need clamping)
  std::vector<int32_t> block_table;    // [b, max_pages]
};

struct MlaSuite {
  std::string name;
  std::string description;
  std::vector<MlaWorkload> workloads;
};

std::vector<std::string> mla_suite_names();  // "mla-serving", "mla-edge"
// Same (name, seed): the same block tables; another seed: other pages for the same lengths.
// Unknown name: not_found listing the known ones.
Status make_mla_suite(const std::string& name, uint64_t seed, MlaSuite* out);

// The shape of `mlakit run mla_decode`.
struct MlaShape {
  int batch = 1, seq_q = 1, num_heads = 16, page_size = 64;
  int64_t seqlen = 0;  // every request's length; with `mixed`, the longest
  bool causal = false;
  bool mixed = false;  // lengths in [seqlen / 64, seqlen], as many per octave (seeded by the shape)
  MlaLayout layout = MlaLayout::kCombined;
};
// One workload of that shape: each request on its own random pages, one spare page. Fails naming
// the option when the problem is invalid.
Status make_mla_workload(const MlaShape& shape, uint64_t seed, MlaWorkload* out);

// Host inputs of one workload: q, and only the pages the requests use (a cache of 4 GiB holding
// 40 used pages costs 40 pages here). The reference reads them through `tensors()` with
// `problem` (num_pages = the used pages) and `block_table` (the workload's, page ids replaced by
// their index in `pages`; ids outside the cache stay outside).
struct MlaHostData {
  MlaProblem problem;
  std::vector<uint16_t> q;            // [b, s_q, h, ckv + kpe], randn
  std::vector<int32_t> pages;         // the workload's page ids that some request uses, ascending
  std::vector<uint16_t> cache;        // [pages.size(), page_size, ckv + kpe]; unused rows NaN
  std::vector<int32_t> block_table;   // [b, max_pages], into `pages`
  std::vector<int32_t> cache_seqlens;  // the workload's
  float sm_scale = 0.f;
  MlaTensors tensors() const;  // host pointers, combined layout
};
void make_mla_host_data(const MlaWorkload& w, uint64_t seed, MlaHostData* out);

// Distinct page ids that requests use (within their first ceil(n_b / page_size) entries, ids in
// the cache), counted without building anything: what sizes MlaHostData::cache.
int64_t mla_used_pages(const MlaWorkload& w);

}  // namespace mlakit
