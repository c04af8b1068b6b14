// Page placement and the host inputs of MLA workloads (docs/workloads.md, "mla_decode").
#include <algorithm>
#include <numeric>

#include "plan/mla/semantics.h"
#include "workloads/mla/synth.h"
#include "workloads/randn.h"
#include "workloads/rng.h"

namespace mlakit {

namespace {

// bf16 NaN with every bit set: what verification's 0xFF poison writes too.
constexpr uint16_t kNanBf16 = 0xFFFF;

// For each page id a request uses: how many of its leading rows some request reads (pages shared
// by requests take the largest). Entries outside the cache are skipped.
std::vector<std::pair<int32_t, int32_t>> used_rows_by_page(const MlaWorkload& w) {
  const MlaProblem& p = w.problem;
  std::vector<std::pair<int32_t, int32_t>> used;  // (page id, rows)
  for (int b = 0; b < p.batch; ++b) {
    const int64_t n = mla_request_rows(p, w.cache_seqlens[size_t(b)]);
    const int32_t* row = w.block_table.data() + size_t(b) * size_t(p.max_pages);
    for (int64_t k = 0; k < mla_request_pages(p, n); ++k)
      if (row[k] >= 0 && row[k] < p.num_pages)
        used.emplace_back(row[k], int32_t(std::min<int64_t>(p.page_size, n - k * p.page_size)));
  }
  std::sort(used.begin(), used.end());
  std::vector<std::pair<int32_t, int32_t>> merged;  // one entry per page, the largest count
  for (const auto& u : used) {
    if (!merged.empty() && merged.back().first == u.first) merged.back().second = std::max(merged.back().second, u.second);
    else merged.push_back(u);
  }
  return merged;
}

}  // namespace

const char* layout_name(MlaLayout layout) { return layout == MlaLayout::kCombined ? "combined" : "separate"; }

int64_t mla_used_pages(const MlaWorkload& w) { return int64_t(used_rows_by_page(w).size()); }

MlaTensors MlaHostData::tensors() const {
  const int64_t C = problem.head_dim_ckv, D = C + problem.head_dim_kpe, H = problem.num_heads;
  MlaTensors t;
  t.q_nope = q.data();
  t.q_pe = q.data() + C;
  t.q_nope_stride_h = t.q_pe_stride_h = D;
  t.q_nope_stride_s = t.q_pe_stride_s = H * D;
  t.q_nope_stride_b = t.q_pe_stride_b = problem.seq_q * H * D;
  t.ckv_cache = cache.data();
  t.kpe_cache = cache.data() + C;
  t.ckv_stride_row = t.kpe_stride_row = D;
  t.ckv_stride_page = t.kpe_stride_page = problem.page_size * D;
  t.block_table = block_table.data();
  t.cache_seqlens = cache_seqlens.data();
  t.sm_scale = sm_scale;
  return t;
}

void make_mla_host_data(const MlaWorkload& w, uint64_t seed, MlaHostData* out) {
  const MlaProblem& p = w.problem;
  const int64_t D = p.head_dim_ckv + p.head_dim_kpe, P = p.page_size;
  const uint64_t name = synth::hash_string(w.name);
  out->problem = p;
  out->sm_scale = w.sm_scale;
  out->cache_seqlens = w.cache_seqlens;
  out->q.resize(size_t(int64_t(p.batch) * p.seq_q * p.num_heads * D));
  fill_randn_bf16(out->q.data(), int64_t(out->q.size()), seed, randn_stream("mla_q", name));

  const std::vector<std::pair<int32_t, int32_t>> used = used_rows_by_page(w);
  out->pages.clear();
  for (const auto& u : used) out->pages.push_back(u.first);
  // At least one page, so that the reference's problem is valid when no request reads a row.
  const int64_t local_pages = std::max<int64_t>(1, int64_t(used.size()));
  out->problem.num_pages = int(local_pages);
  out->cache.resize(size_t(local_pages * P * D));
  fill_randn_bf16(out->cache.data(), int64_t(out->cache.size()), seed, randn_stream("mla_cache", name));
  for (size_t k = 0; k < size_t(local_pages); ++k) {  // rows no request reads: NaN
    const int64_t rows = k < used.size() ? used[k].second : 0;
    std::fill(out->cache.begin() + int64_t(k) * P * D + rows * D, out->cache.begin() + (int64_t(k) + 1) * P * D, kNanBf16);
  }
  out->block_table.resize(w.block_table.size());
  for (size_t e = 0; e < w.block_table.size(); ++e) {
    const auto it = std::lower_bound(out->pages.begin(), out->pages.end(), w.block_table[e]);
    out->block_table[e] = it != out->pages.end() && *it == w.block_table[e] ? int32_t(it - out->pages.begin()) : -1;
  }
}

namespace mla_synth {

Status place_requests(MlaWorkload* w, const std::vector<int32_t>& rows, uint64_t seed, const Placement& where) {
  MlaProblem& p = w->problem;
  p.batch = int(rows.size());
  int64_t needed = 0, most = 1;
  for (int32_t n : rows) {
    const int64_t pages = (std::max<int64_t>(n, 0) + p.page_size - 1) / p.page_size;
    needed += pages;
    most = std::max(most, pages);
  }
  p.max_pages = where.max_pages > 0 ? where.max_pages : int(most);
  const int64_t num_pages = where.num_pages > 0 ? where.num_pages : where.lowest_page + needed + 1;
  if (num_pages - where.lowest_page < needed + 1 || num_pages > INT32_MAX || p.max_pages < most)
    return Status::invalid_argument(w->name + ": " + std::to_string(needed) + " pages (the most for one request: " +
                                    std::to_string(most) + ") and a spare do not fit pages [" +
                                    std::to_string(where.lowest_page) + ", " + std::to_string(num_pages) +
                                    ") with max_pages " + std::to_string(p.max_pages));
  p.num_pages = int(num_pages);
  MLAKIT_RETURN_IF_ERROR(p.validate());
  // A partial Fisher-Yates over [lowest_page, num_pages): distinct pages in random order.
  synth::Rng rng(synth::mix(seed, synth::hash_string(w->name)));
  std::vector<int32_t> pool(size_t(num_pages - where.lowest_page));
  std::iota(pool.begin(), pool.end(), where.lowest_page);
  int64_t drawn = 0;
  const auto draw = [&]() {
    std::swap(pool[size_t(drawn)], pool[size_t(drawn + int64_t(rng.uniform(uint64_t(int64_t(pool.size()) - drawn))))]);
    return pool[size_t(drawn++)];
  };
  const int32_t spare = draw();
  w->block_table.assign(size_t(p.batch) * size_t(p.max_pages), spare);
  for (int b = 0; b < p.batch; ++b) {
    int32_t* row = w->block_table.data() + size_t(b) * size_t(p.max_pages);
    for (int64_t k = 0; k < mla_request_pages(p, std::max<int32_t>(rows[size_t(b)], 0)); ++k) row[k] = draw();
  }
  w->cache_seqlens = rows;
  return Status::ok();
}

}  // namespace mla_synth

}  // namespace mlakit
