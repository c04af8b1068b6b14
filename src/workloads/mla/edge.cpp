// mla-edge: the inputs a kernel gets wrong first (docs/workloads.md, "mla-edge"). Each workload
// places its requests on random pages (never in order) and some then bend the block table or the
// lengths. Lengths are fixed by the workload; only the pages change with the seed.
#include <climits>

#include "workloads/mla/synth.h"
#include "workloads/suite.h"

namespace mlakit::mla_synth {

namespace {

constexpr MlaLayout kSeparate = MlaLayout::kSeparate, kCombined = MlaLayout::kCombined;

// The cache past 4 GiB: 60000 pages of 64 rows are 4.1 GiB combined (73,728 B per page) and 3.7 GiB
// of ckv alone; the pages used start past the 2^31-byte offset of each layout (page 29128 combined,
// page 32768 for the 1024-byte ckv rows), so 32-bit offsets break there.
constexpr int64_t kBigCachePages = 60000;
constexpr int32_t kPast2GiBCombined = 29200, kPast2GiBSeparate = 32768;

struct EdgeBuilder {
  uint64_t seed;
  MlaSuite* out;

  Status add(MlaWorkload w, const std::vector<int32_t>& rows, const Placement& where = {}) {
    MLAKIT_RETURN_IF_ERROR(place_requests(&w, rows, seed, where));
    out->workloads.push_back(std::move(w));
    return Status::ok();
  }
  // The last workload added, to bend.
  MlaWorkload& last() { return out->workloads.back(); }
  int32_t* row(int b) { return last().block_table.data() + size_t(b) * size_t(last().problem.max_pages); }
};

Status add_lengths(EdgeBuilder& e) {
  MLAKIT_RETURN_IF_ERROR(e.add(blank_workload("edge-seqlen-0-1", 1, 16, 64, false, kSeparate), {0, 1, 0, 1}));
  MLAKIT_RETURN_IF_ERROR(
      e.add(blank_workload("edge-partial-page", 1, 16, 64, false, kCombined), {63, 64, 65, 127, 1000}));
  MLAKIT_RETURN_IF_ERROR(e.add(blank_workload("edge-t131000", 1, 16, 64, false, kSeparate), {131000}));
  // 2048 short requests, every 16th empty: many tiny units of work for the scheduler.
  std::vector<int32_t> rows = mixed_lengths("edge-b2048-short", 2048, 1, 512);
  for (size_t b = 0; b < rows.size(); b += 16) rows[b] = 0;
  return e.add(blank_workload("edge-b2048-short", 1, 16, 64, false, kSeparate), rows);
}

Status add_queries(EdgeBuilder& e) {
  // Causal s_q = 4: requests of 0..3 rows leave their first queries without a row (output 0,
  // lse -inf).
  MLAKIT_RETURN_IF_ERROR(e.add(blank_workload("edge-causal-s4", 4, 16, 64, true, kCombined), {0, 1, 2, 3, 4, 777}));
  return e.add(blank_workload("edge-s4-noncausal", 4, 16, 64, false, kSeparate), {1, 100, 3000});
}

Status add_page_sizes(EdgeBuilder& e) {
  MLAKIT_RETURN_IF_ERROR(e.add(blank_workload("edge-ps1", 2, 16, 1, true, kSeparate), {0, 1, 3000}));
  return e.add(blank_workload("edge-ps16", 2, 16, 16, true, kCombined), {15, 16, 17, 5000});
}

Status add_heads(EdgeBuilder& e) {
  MLAKIT_RETURN_IF_ERROR(e.add(blank_workload("edge-h32", 1, 32, 64, false, kSeparate), {1, 300, 4096}));
  MLAKIT_RETURN_IF_ERROR(e.add(blank_workload("edge-h64-s2c", 2, 64, 64, true, kCombined), {1, 2, 2500}));
  return e.add(blank_workload("edge-h128-s4c", 4, 128, 64, true, kSeparate), {3, 1500});
}

Status add_big_caches(EdgeBuilder& e) {
  for (MlaLayout layout : {kCombined, kSeparate}) {
    Placement where;
    where.num_pages = kBigCachePages;
    where.lowest_page = layout == kCombined ? kPast2GiBCombined : kPast2GiBSeparate;
    const std::string name = std::string("edge-4gib-") + layout_name(layout);
    MLAKIT_RETURN_IF_ERROR(e.add(blank_workload(name, 1, 16, 64, false, layout), {2000, 300}, where));
    e.row(0)[0] = int32_t(kBigCachePages - 1);  // the cache's last page too (it was spare or unused)
  }
  return Status::ok();
}

Status add_bad_tables(EdgeBuilder& e) {
  // Page ids outside [0, num_pages) among the pages requests use: their rows read as zeros.
  MLAKIT_RETURN_IF_ERROR(e.add(blank_workload("edge-bad-page-ids", 2, 16, 64, true, kSeparate), {200, 130, 64}));
  const int32_t n = e.last().problem.num_pages;
  e.row(0)[1] = -1;
  e.row(0)[3] = n;
  e.row(1)[0] = INT32_MAX;
  e.row(1)[2] = INT32_MIN;
  e.row(2)[0] = n + 5;
  // Lengths outside [0, max_pages * page_size] are clamped: 700 and INT32_MAX to 640, -5 to 0.
  Placement ten_pages;
  ten_pages.max_pages = 10;
  MLAKIT_RETURN_IF_ERROR(
      e.add(blank_workload("edge-clamped-seqlens", 1, 16, 64, false, kCombined), {640, 100, 640, 640}, ten_pages));
  e.last().cache_seqlens = {700, -5, INT32_MAX, 640};
  // Prefix sharing: request 1 starts with request 0's first 8 pages, request 2 with its first.
  MLAKIT_RETURN_IF_ERROR(e.add(blank_workload("edge-shared-pages", 1, 16, 64, false, kSeparate), {1000, 1000, 500}));
  for (int k = 0; k < 8; ++k) e.row(1)[k] = e.row(0)[k];
  e.row(2)[0] = e.row(0)[0];
  return Status::ok();
}

}  // namespace

Status make_edge_suite(uint64_t seed, MlaSuite* out) {
  start_suite(out, "mla-edge",
              "edge cases: lengths 0 and 1, partial last pages, 128k rows, 2048 short requests, causal s_q 4 with "
              "queries that see no row, page sizes 1 and 16, 32/64/128 heads, caches past 4 GiB (combined and "
              "separate), page ids outside the cache (zeros), clamped lengths, shared pages; separate and combined "
              "layouts");
  EdgeBuilder e{seed, out};
  MLAKIT_RETURN_IF_ERROR(add_lengths(e));
  MLAKIT_RETURN_IF_ERROR(add_queries(e));
  MLAKIT_RETURN_IF_ERROR(add_page_sizes(e));
  MLAKIT_RETURN_IF_ERROR(add_heads(e));
  MLAKIT_RETURN_IF_ERROR(add_big_caches(e));
  return add_bad_tables(e);
}

}  // namespace mlakit::mla_synth
