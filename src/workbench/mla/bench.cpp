// MlaBench: suites, the shape options of `mlakit run mla_decode`, the host footprint estimate and
// the workload description the tables and records read (inputs.cpp has the inputs).
#include "workbench/mla/bench.h"

#include <algorithm>
#include <thread>

#include "base/format.h"
#include "plan/mla/contract.h"
#include "plan/mla/cost.h"
#include "plan/mla/semantics.h"
#include "workbench/op_bench_impl.h"

namespace mlakit {

Status MlaBench::make_suite(const std::string& name, const ShapeArgs&, uint64_t seed, std::vector<MlaWorkload>* out) {
  MlaSuite suite;
  MLAKIT_RETURN_IF_ERROR(make_mla_suite(name, seed, &suite));
  *out = std::move(suite.workloads);
  return Status::ok();
}

Status MlaBench::load_trace(const std::string&, const std::string&, uint64_t, std::vector<MlaWorkload>*) {
  return Status::unsupported("mla_decode has no trace reader yet; use --suite mla-serving or mla-edge");
}

const std::vector<ShapeOption>& MlaBench::shape_options() {
  static const std::vector<ShapeOption> options = {
      {"b", 1, 65536, true, "requests (batch)"},
      {"t", 0, INT32_MAX, true, "context length: cache_seqlens of every request"},
      {"s", 1, 4, false, "query tokens per request (s_q), default 1"},
      {"heads", 1, 128, false, "query heads: 16, 32, 64 or 128, default 16"},
      {"page-size", 1, 1024, false, "rows per page, default 64"},
      {"causal", 0, 1, false, "query i of s_q sees its request's first n - (s_q - 1 - i) rows", true},
      {"mixed", 0, 1, false, "lengths in [t / 64, t], as many per octave, instead of all t", true},
      {"separate", 0, 1, false, "four contiguous tensors instead of views of 576-wide q and cache", true},
  };
  return options;
}

namespace {

// The shape the options name; the head count checked here so that its error names --heads.
Status shape_of(const ShapeArgs& args, MlaShape* s) {
  const auto get = [&](const char* name, long long fallback) {
    const auto it = args.find(name);
    return it == args.end() ? fallback : it->second;
  };
  s->batch = int(get("b", 1));
  s->seqlen = get("t", 0);
  s->seq_q = int(get("s", 1));
  s->num_heads = int(get("heads", 16));
  s->page_size = int(get("page-size", 64));
  s->causal = get("causal", 0) != 0;
  s->mixed = get("mixed", 0) != 0;
  s->layout = get("separate", 0) != 0 ? MlaLayout::kSeparate : MlaLayout::kCombined;
  if (std::find(std::begin(kMlaHeadCounts), std::end(kMlaHeadCounts), s->num_heads) == std::end(kMlaHeadCounts))
    return Status::invalid_argument("--heads: expected one of 16, 32, 64, 128, got " + std::to_string(s->num_heads));
  return Status::ok();
}

// Host throughput per thread of what an MLA session does, measured on a 2-core x86 runner: rough
// on purpose, for warnings only (workbench/host_budget.h).
constexpr double kSynthElementsPerSecond = 5e7;
constexpr double kReferenceFlopsPerSecond = 9e9;

// What a session holds for a workload of `p` whose requests use `used_pages` pages: q, the used
// pages (workloads/mla/suites.h, MlaHostData), the block table three times (the suite's, the
// session's and its remapped copy), the fp64 reference output and lse, and each reference
// thread's scores (8 heads x the longest length).
HostFootprint mla_footprint(const MlaProblem& p, int64_t used_pages, double reference_flops) {
  const double width = p.head_dim_ckv + p.head_dim_kpe, queries = double(p.batch) * p.seq_q * p.num_heads;
  const double threads = std::max(1u, std::thread::hardware_concurrency());
  const double cache_elems = double(std::max<int64_t>(used_pages, 1)) * p.page_size * width;
  const double cache = cache_elems * 2, q = queries * width * 2;
  const double tables = 3.0 * 4 * double(p.batch) * p.max_pages;
  const double reference = queries * (p.head_dim_ckv + 1) * 8 + threads * 8 * 8 * double(p.max_seqlen());
  HostFootprint f;
  f.bytes = cache + q + tables + reference;
  f.detail = "cache pages " + format_bytes(cache) + ", queries " + format_bytes(q) + ", block tables " +
             format_bytes(tables) + ", reference " + format_bytes(reference);
  f.synth_seconds = (cache_elems + queries * width) / (kSynthElementsPerSecond * threads);
  f.reference_seconds = reference_flops / (kReferenceFlopsPerSecond * threads);
  return f;
}

}  // namespace

// The footprint of the shape before anything is synthesized: every request at the full length.
Status MlaBench::shape_footprint(const ShapeArgs& args, HostFootprint* out) {
  MlaShape s;
  MLAKIT_RETURN_IF_ERROR(shape_of(args, &s));
  MlaProblem p;
  p.batch = s.batch;
  p.seq_q = s.seq_q;
  p.num_heads = s.num_heads;
  p.page_size = s.page_size;
  p.causal = s.causal;
  p.max_pages = int(std::max<int64_t>(1, mla_request_pages(p, s.seqlen)));
  const int64_t pages = int64_t(p.batch) * p.max_pages;
  *out = mla_footprint(p, pages, mla_cost(p, std::vector<int32_t>(size_t(p.batch), int32_t(s.seqlen))).flops);
  const double cache = double(pages) * p.page_size * (p.head_dim_ckv + p.head_dim_kpe) * 2;
  if (cache >= out->bytes / 2)
    out->sized_by = "--b " + std::to_string(s.batch) + " --t " + std::to_string(s.seqlen);
  else
    out->sized_by = "--b " + std::to_string(s.batch) + " --s " + std::to_string(s.seq_q) + " --heads " +
                    std::to_string(s.num_heads);
  return Status::ok();
}

Status MlaBench::make_shape(const ShapeArgs& args, uint64_t seed, MlaWorkload* out) {
  MlaShape s;
  MLAKIT_RETURN_IF_ERROR(shape_of(args, &s));
  return make_mla_workload(s, seed, out);
}

WorkloadInfo MlaBench::describe(const MlaWorkload& w) {
  WorkloadInfo i;
  i.name = w.name;
  i.shape = w.problem.to_string() + " " + layout_name(w.layout);
  i.bucket = mla_shape_bucket(w.problem);
  i.num_tokens = w.problem.batch * w.problem.seq_q;
  i.cost = mla_cost(w.problem, w.cache_seqlens);
  i.host = mla_footprint(w.problem, mla_used_pages(w), i.cost.flops);
  return i;
}

const OpBench& mla_bench() {
  static const OpBenchT<MlaBench> bench;
  return bench;
}

}  // namespace mlakit
