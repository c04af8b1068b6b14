// What the MLA suites share (workloads/mla/*.cpp): blank workloads, seeded lengths and the page
// placement that every workload's block table comes from.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workloads/mla/suites.h"

namespace mlakit::mla_synth {

// A workload named `name` with the problem's per-query fields set; place_requests does the rest.
MlaWorkload blank_workload(std::string name, int seq_q, int heads, int page_size, bool causal, MlaLayout layout);

// `count` lengths in [lo, hi]: an octave (a power-of-two range) uniformly, then a length in it,
// so short and long requests are about equally frequent. Seeded by `shape_key` alone: a suite's
// lengths are the same for every seed.
std::vector<int32_t> mixed_lengths(const std::string& shape_key, int count, int32_t lo, int32_t hi);

struct Placement {
  int64_t num_pages = 0;    // 0: the pages the requests use, plus one spare
  int32_t lowest_page = 0;  // pages are drawn from [lowest_page, num_pages)
  int32_t max_pages = 0;    // 0: the most pages one request needs (at least 1)
};

// The workload's problem (batch, max_pages, num_pages) and block table for requests of `rows`
// rows: request b gets ceil(rows[b] / page_size) distinct random pages (drawn with the seed and
// the workload's name, so never in order); every entry past them names one spare page that no
// request uses (its rows are NaN in a session: a kernel that reads past its pages fails
// verification). cache_seqlens = rows. `w->problem` brings s_q, heads, page_size and causal.
Status place_requests(MlaWorkload* w, const std::vector<int32_t>& rows, uint64_t seed, const Placement& where = {});

// mla-edge (edge.cpp).
Status make_edge_suite(uint64_t seed, MlaSuite* out);

}  // namespace mlakit::mla_synth
