// Workload suites: dsa-contest (the 23 public shapes), dsa-serving (T = 16..256, full top-k
// picks), dsa-edge (padding anywhere, empty rows, repeats, page size 1, small topk, large T).
// Index values are synthesized from a seed with the page-run structure of docs/workloads.md;
// q and caches are randn bf16 from a counter-based generator.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mlakit/dsa.h"
#include "workloads/randn.h"

namespace mlakit {

struct DsaWorkload {
  std::string name;            // "contest-07" / "serving-T128" / "edge-empty-T1"
  std::string uuid;            // the dataset's uuid (contest and trace workloads), else empty
  DsaProblem problem;
  float sm_scale = 0.1352337788608801f;
  std::vector<int32_t> indices;  // [T, topk]
};

struct DsaSuite {
  std::string name;
  std::string description;
  std::vector<DsaWorkload> workloads;
};

std::vector<std::string> dsa_suite_names();  // "dsa-contest", "dsa-serving", "dsa-edge"
// Same (name, seed): the same indices; another seed: other indices of the same structure.
// Unknown name: not_found listing the known ones.
Status make_dsa_suite(const std::string& name, uint64_t seed, DsaSuite* out);

// One synthetic workload for `mlakit run`: every row `valid` leading top-k picks clustered by
// page (valid < 0: topk), the rest -1. Fails when valid > topk or valid > num_slots.
Status make_dsa_workload(const DsaProblem& problem, int valid, uint64_t seed, DsaWorkload* out);

// Counts of valid entries (0 <= idx < num_slots) per row.
std::vector<int> valid_per_row(const DsaWorkload& w);

// Host inputs of one workload: q from (seed, workload), caches from (seed, num_pages, page_size).
struct DsaHostData {
  std::vector<uint16_t> q_nope, q_pe, ckv, kpe;
};
void make_dsa_queries(const DsaWorkload& w, uint64_t seed, DsaHostData* data);
void make_dsa_caches(const DsaProblem& p, uint64_t seed, DsaHostData* data);

}  // namespace mlakit
