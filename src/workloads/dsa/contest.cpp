// dsa-contest: the 23 public workloads of data/workloads/dsa_contest.json, embedded through the
// generated contest_table.inc; index values synthesized per docs/workloads.md.
#include <cstdio>

#include "workloads/dsa/synth.h"
#include "workloads/suite.h"

namespace mlakit {
namespace contest {
#include "workloads/dsa/contest_table.inc"
}  // namespace contest

namespace synth {

Status make_contest_suite(uint64_t seed, DsaSuite* out) {
  start_suite(out, "dsa-contest",
              "the 23 public workloads of dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64 "
              "(T = 1..8, 8462 pages of 64 slots): short rows are whole sequences laid out page by page, "
              "full rows are top-k picks of about 60 of 64 slots per page; latency-bound");
  DsaProblem p;
  p.num_heads = contest::kNumHeads;
  p.head_dim_ckv = contest::kHeadDimCkv;
  p.head_dim_kpe = contest::kHeadDimKpe;
  p.num_pages = contest::kNumPages;
  p.page_size = contest::kPageSize;
  p.topk = contest::kTopk;
  int i = 0;
  for (const contest::Shape& shape : contest::kShapes) {
    char name[32];
    std::snprintf(name, sizeof name, "contest-%02d", i++);
    p.num_tokens = shape.num_tokens;
    DsaWorkload w = blank_workload(name, p);
    w.uuid = shape.uuid;
    w.sm_scale = float(contest::kSmScale);
    const std::vector<int> valid(shape.valid_per_row, shape.valid_per_row + shape.num_tokens);
    MLAKIT_RETURN_IF_ERROR(synthesize_rows(&w, valid, RowShape::kMixed, seed));
    out->workloads.push_back(std::move(w));
  }
  return Status::ok();
}

}  // namespace synth
}  // namespace mlakit
