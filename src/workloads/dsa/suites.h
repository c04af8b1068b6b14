// Workload suites: dsa-contest (the 23 public shapes), dsa-serving (T = 16..256, full top-k
// picks), dsa-edge (padding anywhere, empty rows, repeats, page size 1, small topk, large T), and
// each of them on the FP8 cache (kv = fp8: the same workloads, names, indices and bf16 values;
// dsa-edge with a few workloads of its own after them) and with 32, 64 or 128 query heads.
// Index values are synthesized from a seed with the page-run structure of docs/workloads.md;
// q and caches are randn bf16 from a counter-based generator.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mlakit/dsa.h"
#include "plan/dsa/contract.h"
#include "workloads/randn.h"

namespace mlakit {

// How a workload's bf16 cache values are made from the seed and the cache shape.
enum class DsaCacheValues {
  kRandn,     // randn everywhere
  // randn with tiles of 128 channels that test the FP8 scale rule mixed in (dsa-edge's FP8 edges): all
  // +0, all -0, tiny (under the 1e-4 scale clamp), amax exactly 448 * 2^-8 and just above it,
  // and a few large ones; docs/workloads.md lists them.
  kFp8Tiles,
};

struct DsaWorkload {
  std::string name;            // "contest-07" / "serving-T128" / "edge-empty-T1"
  std::string uuid;            // the dataset's uuid (contest and trace workloads), else empty
  DsaProblem problem;
  float sm_scale = 0.1352337788608801f;
  std::vector<int32_t> indices;  // [T, topk]
  DsaCacheValues cache_values = DsaCacheValues::kRandn;
};

struct DsaSuite {
  std::string name;
  std::string description;
  std::vector<DsaWorkload> workloads;
};

// "dsa-contest", "dsa-serving", "dsa-edge".
std::vector<std::string> dsa_suite_names();
// Suite `name` with every workload's num_heads = `heads` (one of kDsaHeadCounts; 16: the workloads
// as defined), its cache in `kv` (FP8: the same
// workloads, names, indices and bf16 values, the cache quantized to 656-byte rows; dsa-edge adds
// its own FP8 edge workloads after them). Same (name, seed): the same indices; another seed: other
// indices of the same structure. An unknown name: not_found listing the known ones; a head count
// no suite comes in: invalid_argument.
Status make_dsa_suite(const std::string& name, uint64_t seed, DsaSuite* out, int heads = 16, DsaKv kv = DsaKv::kBf16);

// One synthetic workload for `mlakit run`: every row `valid` leading top-k picks clustered by
// page (valid < 0: topk), the rest -1; `mixed`: row t takes valid >> (t % 6) picks instead (one
// long row among shorter ones, the shape that pooled rows share CTAs in). Fails when valid > topk
// or valid > num_slots.
Status make_dsa_workload(const DsaProblem& problem, int valid, uint64_t seed, DsaWorkload* out, bool mixed = false);

// Counts of valid entries (0 <= idx < num_slots) per row.
std::vector<int> valid_per_row(const DsaWorkload& w);

// Host inputs of one workload: q from (seed, workload), caches from (seed, num_pages, page_size)
// and the workload's cache values; the cache format does not change the bf16 values.
struct DsaHostData {
  std::vector<uint16_t> q_nope, q_pe, ckv, kpe;
  std::vector<uint8_t> kv;  // the FP8 cache, [slots, 656] (quantize_dsa_caches), else empty
};
void make_dsa_queries(const DsaWorkload& w, uint64_t seed, DsaHostData* data);
void make_dsa_caches(const DsaProblem& p, uint64_t seed, DsaHostData* data,
                     DsaCacheValues values = DsaCacheValues::kRandn);
// The FP8 cache of the bf16 caches: data->kv gets their 656-byte rows (reference/dsa/fp8.h, on
// every hardware thread), and ckv and kpe become the dequantized values, exact in bf16: what a
// kernel reading kv computes with, so the reference reads them.
void quantize_dsa_caches(const DsaProblem& p, DsaHostData* data);

}  // namespace mlakit
