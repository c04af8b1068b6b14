// Suite dispatch, dsa-serving, the one-off synthetic workload of `mlakit run`, and valid counts.
#include "workloads/dsa/suites.h"

#include <algorithm>
#include <iterator>

#include "workloads/dsa/synth.h"
#include "workloads/suite.h"

namespace mlakit {

namespace synth {

namespace {

// dsa-serving: every token of every workload gets its own pages. A full top-k row touches at
// most ceil(2048 / 56) = 37 pages, so T = 256 needs at most 9472 distinct pages; 10240 pages
// (655,360 slots: ckv 640 MiB + kpe 80 MiB) hold them with room to spare, and all serving
// workloads share one cache shape.
constexpr int kServingNumPages = 10240;
constexpr int kServingTokens[] = {16, 32, 64, 128, 256};

}  // namespace

Status make_serving_suite(uint64_t seed, DsaSuite* out) {
  start_suite(out, "dsa-serving",
              "bandwidth-bound decode batches: T = 16, 32, 64, 128, 256, every row 2048 valid top-k picks "
              "(about 60 of 64 slots per page), pages distinct across all tokens, 10240 pages of 64 slots");
  for (int T : kServingTokens) {
    DsaProblem p;
    p.num_tokens = T;
    p.num_pages = kServingNumPages;
    p.page_size = 64;
    p.topk = 2048;
    DsaWorkload w = blank_workload("serving-T" + std::to_string(T), p);
    MLAKIT_RETURN_IF_ERROR(synthesize_rows(&w, std::vector<int>(size_t(T), p.topk), RowShape::kTopk, seed));
    out->workloads.push_back(std::move(w));
  }
  return Status::ok();
}

}  // namespace synth

namespace {

constexpr const char* kBf16Suites[] = {"dsa-contest", "dsa-serving", "dsa-edge"};

// A suite of bf16 caches; false when `name` is none.
bool make_bf16_suite(const std::string& name, uint64_t seed, DsaSuite* out, Status* status) {
  if (name == "dsa-contest") *status = synth::make_contest_suite(seed, out);
  else if (name == "dsa-serving") *status = synth::make_serving_suite(seed, out);
  else if (name == "dsa-edge") *status = synth::make_edge_suite(seed, out);
  else return false;
  return true;
}

// Suite `base`'s workloads on the FP8 cache, in `out`: kv = fp8 (names, indices and bf16 values
// unchanged: they are seeded by the name and the cache shape), then dsa-edge's own FP8 edges.
Status to_fp8_suite(const std::string& base, uint64_t seed, DsaSuite* out) {
  for (DsaWorkload& w : out->workloads) w.problem.kv = DsaKv::kFp8;
  out->description += "; the cache in FP8 (656-byte rows quantized on the host from the same bf16 values)";
  if (base == "dsa-edge") return synth::add_fp8_edges(seed, out);
  return Status::ok();
}

}  // namespace

std::vector<std::string> dsa_suite_names() { return {std::begin(kBf16Suites), std::end(kBf16Suites)}; }

Status make_dsa_suite(const std::string& name, uint64_t seed, DsaSuite* out, int heads, DsaKv kv) {
  if (out == nullptr) return Status::invalid_argument("make_dsa_suite: out is null");
  if (std::find(std::begin(kDsaHeadCounts), std::end(kDsaHeadCounts), heads) == std::end(kDsaHeadCounts))
    return Status::invalid_argument("--heads: the DSA suites come in 16, 32, 64 or 128 query heads; got " +
                                    std::to_string(heads));
  Status st;
  if (!make_bf16_suite(name, seed, out, &st)) {
    std::string known;
    for (const std::string& n : dsa_suite_names()) known += (known.empty() ? "" : ", ") + n;
    return Status::not_found("unknown suite '" + name + "'; known suites: " + known);
  }
  MLAKIT_RETURN_IF_ERROR(st);
  if (kv == DsaKv::kFp8) MLAKIT_RETURN_IF_ERROR(to_fp8_suite(name, seed, out));
  if (heads != 16) {
    for (DsaWorkload& w : out->workloads) {
      w.problem.num_heads = heads;
      w.uuid.clear();  // no longer the dataset's workload
    }
    out->description += "; " + std::to_string(heads) + " query heads";
  }
  return Status::ok();
}

Status make_dsa_workload(const DsaProblem& problem, int valid, uint64_t seed, DsaWorkload* out, bool mixed) {
  if (out == nullptr) return Status::invalid_argument("make_dsa_workload: out is null");
  MLAKIT_RETURN_IF_ERROR(problem.validate());
  if (valid < 0) valid = problem.topk;
  if (valid > problem.topk)
    return Status::invalid_argument("valid: expected at most topk = " + std::to_string(problem.topk) +
                                    ", got " + std::to_string(valid));
  if (valid > problem.num_slots())
    return Status::invalid_argument("valid: expected at most the cache's " + std::to_string(problem.num_slots()) +
                                    " slots (num_pages * page_size), got " + std::to_string(valid));
  const std::string name = "synthetic-T" + std::to_string(problem.num_tokens) + "-ps" +
                           std::to_string(problem.page_size) + "-topk" + std::to_string(problem.topk) +
                           "-v" + std::to_string(valid) + (mixed ? "-mixed" : "") +
                           (problem.num_heads == 16 ? std::string() : "-h" + std::to_string(problem.num_heads));
  DsaWorkload w = synth::blank_workload(name, problem);
  std::vector<int> counts(size_t(problem.num_tokens), valid);
  if (mixed)
    for (size_t t = 0; t < counts.size(); ++t) counts[t] = valid >> (t % 6);
  MLAKIT_RETURN_IF_ERROR(synth::synthesize_rows(&w, counts, synth::RowShape::kTopk, seed));
  *out = std::move(w);
  return Status::ok();
}

std::vector<int> valid_per_row(const DsaWorkload& w) {
  const DsaProblem& p = w.problem;
  std::vector<int> counts(size_t(std::max(0, p.num_tokens)), 0);
  if (w.indices.size() < size_t(p.num_tokens) * size_t(std::max(0, p.topk))) return counts;
  const int64_t num_slots = p.num_slots();
  for (int t = 0; t < p.num_tokens; ++t) {
    const int32_t* row = w.indices.data() + size_t(t) * size_t(p.topk);
    int c = 0;
    for (int k = 0; k < p.topk; ++k) c += (row[k] >= 0 && row[k] < num_slots);
    counts[size_t(t)] = c;
  }
  return counts;
}

}  // namespace mlakit
