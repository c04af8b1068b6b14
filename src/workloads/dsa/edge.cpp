// dsa-edge: the inputs a kernel gets wrong first. Each workload starts from synthesized rows
// (docs/workloads.md) and then bends them: padding anywhere, empty rows, repeated slots, page
// size 1, small topk, T = 1024, the first and last slot of the cache, out-of-range indices.
// Caches stay moderate (1024 pages of 64 slots, or 65536 pages of 1 slot: 75 MiB each) so the
// host generates them quickly; workloads of one shape share them.
#include <algorithm>
#include <climits>

#include "workloads/dsa/synth.h"
#include "workloads/suite.h"

namespace mlakit::synth {

namespace {

constexpr int kEdgePages = 1024;       // page size 64: 65,536 slots
constexpr int kEdgePagesPs1 = 65536;   // page size 1: the same 65,536 slots

DsaProblem edge_problem(int T, int page_size = 64, int num_pages = kEdgePages, int topk = 2048) {
  DsaProblem p;
  p.num_tokens = T;
  p.page_size = page_size;
  p.num_pages = num_pages;
  p.topk = topk;
  return p;
}

int32_t* row_of(DsaWorkload& w, int t) { return w.indices.data() + size_t(t) * size_t(w.problem.topk); }

class EdgeBuilder {
 public:
  EdgeBuilder(uint64_t seed, DsaSuite* out) : seed_(seed), out_(out) {}

  // A workload whose rows are synthesized from valid counts (kMixed), ready to be bent.
  Status start(const std::string& name, const DsaProblem& p, const std::vector<int>& valid, DsaWorkload* w) {
    *w = blank_workload(name, p);
    return synthesize_rows(w, valid, RowShape::kMixed, seed_);
  }
  // A generator for a workload's shape (its valid counts): seeded by the name alone, so the
  // shapes of the suite are the same for every seed and only the index values change.
  static Rng shape_rng(const std::string& name) { return Rng(hash_string(name + "/shape")); }
  void add(DsaWorkload w) { out_->workloads.push_back(std::move(w)); }

 private:
  uint64_t seed_;
  DsaSuite* out_;
};

Status add_empty_and_padding(EdgeBuilder& b) {
  DsaWorkload w;
  MLAKIT_RETURN_IF_ERROR(b.start("edge-empty-T1", edge_problem(1), {0}, &w));
  b.add(std::move(w));

  // Row 0: 100 padding entries first; row 1: a hole at every third position; row 2: 37 valid
  // entries at the end of the row; row 3: one valid entry in the last position.
  MLAKIT_RETURN_IF_ERROR(b.start("edge-pad-anywhere", edge_problem(4), {2048, 2048, 37, 1}, &w));
  const int K = w.problem.topk;
  int32_t* r0 = row_of(w, 0);
  std::fill(r0, r0 + 100, -1);
  int32_t* r1 = row_of(w, 1);
  for (int k = 1; k < K; k += 3) r1[k] = -1;
  for (int t = 2; t < 4; ++t) {
    int32_t* r = row_of(w, t);
    const int v = t == 2 ? 37 : 1;
    std::copy_backward(r, r + v, r + K);
    std::fill(r, r + K - v, -1);
  }
  b.add(std::move(w));
  return Status::ok();
}

Status add_repeats(EdgeBuilder& b) {
  // Row 0: one slot 2048 times; row 1: 8 slots cycled over all 2048 positions; row 2: a
  // 100-slot sequence twice in a row, then padding.
  DsaWorkload w;
  MLAKIT_RETURN_IF_ERROR(b.start("edge-repeat", edge_problem(3), {1, 8, 100}, &w));
  const int K = w.problem.topk;
  int32_t* r0 = row_of(w, 0);
  std::fill(r0 + 1, r0 + K, r0[0]);
  int32_t* r1 = row_of(w, 1);
  for (int k = 8; k < K; ++k) r1[k] = r1[k % 8];
  int32_t* r2 = row_of(w, 2);
  std::copy(r2, r2 + 100, r2 + 100);
  b.add(std::move(w));
  return Status::ok();
}

Status add_page_size_1(EdgeBuilder& b) {
  DsaWorkload w;
  MLAKIT_RETURN_IF_ERROR(b.start("edge-ps1-T1", edge_problem(1, 1, kEdgePagesPs1), {2048}, &w));
  b.add(std::move(w));
  MLAKIT_RETURN_IF_ERROR(
      b.start("edge-ps1-T8", edge_problem(8, 1, kEdgePagesPs1), {2048, 1, 700, 0, 2048, 64, 1500, 33}, &w));
  b.add(std::move(w));
  Rng rng = EdgeBuilder::shape_rng("edge-ps1-T64");
  std::vector<int> valid(64);
  for (int& v : valid) v = rng.uniform(4) == 0 ? 2048 : int(rng.range(0, 2047));
  MLAKIT_RETURN_IF_ERROR(b.start("edge-ps1-T64", edge_problem(64, 1, kEdgePagesPs1), valid, &w));
  b.add(std::move(w));
  return Status::ok();
}

Status add_small_topk(EdgeBuilder& b) {
  for (int K : {256, 512, 1024}) {
    DsaWorkload w;
    MLAKIT_RETURN_IF_ERROR(b.start("edge-topk" + std::to_string(K) + "-T4", edge_problem(4, 64, kEdgePages, K),
                                   {K, K / 2, 1, K - 37}, &w));
    b.add(std::move(w));
  }
  return Status::ok();
}

Status add_large_t(EdgeBuilder& b) {
  // About 10% empty rows, 25% full rows, the rest 1..2047 valid; rows 0 and 1 are one of each.
  Rng rng = EdgeBuilder::shape_rng("edge-T1024");
  std::vector<int> valid(1024);
  for (int& v : valid) {
    const uint64_t r = rng.uniform(100);
    v = r < 10 ? 0 : r < 35 ? 2048 : int(rng.range(1, 2047));
  }
  valid[0] = 0;
  valid[1] = 2048;
  DsaWorkload w;
  MLAKIT_RETURN_IF_ERROR(b.start("edge-T1024", edge_problem(1024), valid, &w));
  b.add(std::move(w));
  return Status::ok();
}

Status add_cache_bounds(EdgeBuilder& b) {
  // Row 0: slot 0 and the last slot, then a 62-slot run; row 1: only the last slot and slot 0.
  DsaWorkload w;
  MLAKIT_RETURN_IF_ERROR(b.start("edge-first-last-slot", edge_problem(2), {64, 0}, &w));
  const int32_t last = int32_t(w.problem.num_slots() - 1);
  int32_t* r0 = row_of(w, 0);
  r0[0] = 0;
  r0[1] = last;
  int32_t* r1 = row_of(w, 1);
  r1[0] = last;
  r1[1] = 0;
  b.add(std::move(w));
  return Status::ok();
}

Status add_out_of_range(EdgeBuilder& b) {
  // Invalid indices (>= num_slots or < -1) that kernels treat as padding: mixed into the valid
  // part of row 0 and its padding, making up all of row 1 (an empty row), and leading row 2.
  DsaWorkload w;
  MLAKIT_RETURN_IF_ERROR(b.start("edge-out-of-range", edge_problem(3), {512, 0, 100}, &w));
  const int K = w.problem.topk;
  const int32_t n = int32_t(w.problem.num_slots());
  int32_t* r0 = row_of(w, 0);
  for (int k = 0; k < 512; ++k) {
    if (k % 7 == 3) r0[k] = n;
    else if (k % 11 == 5) r0[k] = INT32_MAX;
    else if (k % 13 == 7) r0[k] = -2;
    else if (k % 17 == 1) r0[k] = n + 64;
  }
  r0[0] = INT32_MIN;
  r0[1000] = n;
  r0[K - 1] = -3;
  const int32_t bad[] = {n, -2, INT32_MAX, INT32_MIN, -1000, n + 1};
  int32_t* r1 = row_of(w, 1);
  for (int k = 0; k < K; ++k) r1[k] = bad[k % 6];
  row_of(w, 2)[0] = -5;
  b.add(std::move(w));
  return Status::ok();
}

// dsa-edge's own on the FP8 cache: every tile pattern of kFp8Tiles under full, partial and one-slot rows; then
// rows over pages of 16 and 128 slots (the page stride of the FP8 cache is page_size * 656 bytes).
Status add_fp8_only(EdgeBuilder& b) {
  DsaProblem p = edge_problem(4);
  p.kv = DsaKv::kFp8;
  DsaWorkload w;
  MLAKIT_RETURN_IF_ERROR(b.start("edge-fp8-tiles-T4", p, {2048, 2048, 700, 1}, &w));
  w.cache_values = DsaCacheValues::kFp8Tiles;
  b.add(std::move(w));
  for (const int page_size : {16, 128}) {
    p = edge_problem(4, page_size, kEdgePages * 64 / page_size);  // the same 65,536 slots
    p.kv = DsaKv::kFp8;
    MLAKIT_RETURN_IF_ERROR(
        b.start("edge-fp8-ps" + std::to_string(page_size) + "-T4", p, {2048, 1000, page_size + 3, 0}, &w));
    b.add(std::move(w));
  }
  return Status::ok();
}

}  // namespace

Status add_fp8_edges(uint64_t seed, DsaSuite* out) {
  out->description +=
      "; then its own: the tiles that test the FP8 scale rule (all +0, all -0, tiny under the 1e-4 clamp, "
      "amax 448 * 2^-8 and just above, large), page sizes 16 and 128";
  EdgeBuilder b(seed, out);
  return add_fp8_only(b);
}

Status make_edge_suite(uint64_t seed, DsaSuite* out) {
  start_suite(out, "dsa-edge",
              "edge cases: an empty T=1 row, padding anywhere, repeated slots, page size 1, topk 256/512/1024, "
              "T = 1024 with empty and full rows, the first and last slot of the cache, out-of-range indices "
              "(treated as padding)");
  EdgeBuilder b(seed, out);
  MLAKIT_RETURN_IF_ERROR(add_empty_and_padding(b));
  MLAKIT_RETURN_IF_ERROR(add_repeats(b));
  MLAKIT_RETURN_IF_ERROR(add_page_size_1(b));
  MLAKIT_RETURN_IF_ERROR(add_small_topk(b));
  MLAKIT_RETURN_IF_ERROR(add_large_t(b));
  MLAKIT_RETURN_IF_ERROR(add_cache_bounds(b));
  MLAKIT_RETURN_IF_ERROR(add_out_of_range(b));
  return Status::ok();
}

}  // namespace mlakit::synth
