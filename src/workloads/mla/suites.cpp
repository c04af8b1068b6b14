// Suite dispatch, mla-serving, and the one-off shape of `mlakit run mla_decode`.
#include "workloads/mla/suites.h"

#include <algorithm>

#include "workloads/mla/synth.h"
#include "workloads/rng.h"
#include "workloads/suite.h"

namespace mlakit {

namespace mla_synth {

MlaWorkload blank_workload(std::string name, int seq_q, int heads, int page_size, bool causal, MlaLayout layout) {
  MlaWorkload w;
  w.name = std::move(name);
  w.problem.seq_q = seq_q;
  w.problem.num_heads = heads;
  w.problem.page_size = page_size;
  w.problem.causal = causal ? 1 : 0;
  w.layout = layout;
  return w;
}

std::vector<int32_t> mixed_lengths(const std::string& shape_key, int count, int32_t lo, int32_t hi) {
  // Octave by octave: pick one of the powers of two between lo and hi, then a length inside it, so
  // short and long requests are about equally frequent (real batches are); integers only.
  synth::Rng rng(synth::hash_string(shape_key + "/lengths"));
  int octaves = 1;
  while (int64_t(lo) << octaves < hi) ++octaves;
  std::vector<int32_t> lengths(size_t(std::max(count, 0)));
  for (int32_t& n : lengths) {
    const int o = int(rng.uniform(uint64_t(octaves)));
    const int64_t a = int64_t(lo) << o, b = std::min<int64_t>(hi, (int64_t(lo) << (o + 1)) - 1);
    n = int32_t(rng.range(a, std::max(a, b)));
  }
  return lengths;
}

}  // namespace mla_synth

namespace {

using mla_synth::blank_workload;

// One mla-serving workload: `b` requests at context `t` (or, for t < 0, mixed lengths up to -t).
struct ServingCase {
  int b;
  int t;
  int heads = 16;
  int seq_q = 1;  // s_q 2 runs causal (MTP: one speculative token)
};

// Rows per workload stay at or under 1 Mi (1.2 GB of cache on the device and the host; the CPU
// reference at h = 128, s_q = 2 on such a workload is ~0.6 TFLOP); docs/workloads.md has the why.
const ServingCase kServing[] = {
    {1, 1024},        {1, 4096},          {1, 16384},        {1, 65536},       {1, 131072},
    {8, 4096},        {8, 65536},         {32, 1024},        {32, 4096},       {32, 16384},
    {128, 1024},      {128, 4096},        {256, 1024},       {256, 4096},      {32, 4096, 16, 2},
    {128, 1024, 16, 2}, {1, 16384, 128},  {8, 4096, 128},    {64, 4096, 128},  {128, 1024, 128},
    {32, 4096, 128, 2}, {32, -65536},     {128, -16384},     {32, -16384, 128, 2},
};

std::string serving_name(const ServingCase& c) {
  std::string name = "b";
  name += std::to_string(c.b);
  name += c.t > 0 ? "-t" : "-mix";
  name += std::to_string(c.t > 0 ? c.t : -c.t);
  if (c.heads != 16) name += "-h" + std::to_string(c.heads);
  if (c.seq_q != 1) name += "-s" + std::to_string(c.seq_q) + "c";
  return name;
}

Status make_serving_suite(uint64_t seed, MlaSuite* out) {
  start_suite(out, "mla-serving",
              "bandwidth-bound decode batches on a combined 576-wide cache of 64-row pages: b = 1..256 at contexts "
              "1k..128k (at most 1 Mi rows per workload), 16 and 128 heads, s_q 1 and 2 (causal), mixed lengths, and "
              "the 4-request 46k/4.6k/1.7k/1.7k batch at s_q 4");
  for (const ServingCase& c : kServing) {
    MlaWorkload w = blank_workload(serving_name(c), c.seq_q, c.heads, 64, c.seq_q > 1, MlaLayout::kCombined);
    const std::vector<int32_t> rows = c.t > 0 ? std::vector<int32_t>(size_t(c.b), c.t)
                                              : mla_synth::mixed_lengths(w.name, c.b, 256, -c.t);
    MLAKIT_RETURN_IF_ERROR(mla_synth::place_requests(&w, rows, seed));
    out->workloads.push_back(std::move(w));
  }
  MlaWorkload w = blank_workload("b4-mix46k-s4c", 4, 16, 64, true, MlaLayout::kCombined);
  MLAKIT_RETURN_IF_ERROR(mla_synth::place_requests(&w, {46000, 4600, 1700, 1700}, seed));
  out->workloads.push_back(std::move(w));
  return Status::ok();
}

}  // namespace

std::vector<std::string> mla_suite_names() { return {"mla-serving", "mla-edge"}; }

Status make_mla_suite(const std::string& name, uint64_t seed, MlaSuite* out) {
  if (out == nullptr) return Status::invalid_argument("make_mla_suite: out is null");
  if (name == "mla-serving") return make_serving_suite(seed, out);
  if (name == "mla-edge") return mla_synth::make_edge_suite(seed, out);
  std::string known;
  for (const std::string& n : mla_suite_names()) known += (known.empty() ? "" : ", ") + n;
  return Status::not_found("unknown suite '" + name + "'; known suites: " + known);
}

Status make_mla_workload(const MlaShape& s, uint64_t seed, MlaWorkload* out) {
  if (out == nullptr) return Status::invalid_argument("make_mla_workload: out is null");
  if (s.seqlen < 0 || s.seqlen > INT32_MAX)
    return Status::invalid_argument("--t: expected a length in [0, 2147483647], got " + std::to_string(s.seqlen));
  std::string name = "b";  // (appended piece by piece: GCC 12 warns wrongly on one long concatenation)
  name += std::to_string(s.batch);
  name += s.mixed ? "-mix" : "-t";
  name += std::to_string(s.seqlen);
  MlaWorkload w = blank_workload(name, s.seq_q, s.num_heads, s.page_size, s.causal, s.layout);
  w.problem.batch = s.batch;
  MLAKIT_RETURN_IF_ERROR(w.problem.validate());
  const int32_t t = int32_t(s.seqlen);
  const std::vector<int32_t> rows = s.mixed && t > 0 ? mla_synth::mixed_lengths(name, s.batch, std::max(1, t / 64), t)
                                                     : std::vector<int32_t>(size_t(s.batch), t);
  MLAKIT_RETURN_IF_ERROR(mla_synth::place_requests(&w, rows, seed));
  *out = std::move(w);
  return Status::ok();
}

}  // namespace mlakit
