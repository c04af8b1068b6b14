#include "workbench/dsa/bench.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <thread>

#include "base/format.h"

#include "plan/dsa/contract.h"
#include "plan/dsa/cost.h"
#include "reference/compare.h"
#include "workbench/op_bench_impl.h"
#include "workloads/dsa/trace.h"

namespace mlakit {

struct DsaBench::Inputs::Device {
  DeviceBuffer q_nope, q_pe, ckv, kpe, kv, indices, out, lse;
};

DsaBench::Inputs::Inputs() = default;
DsaBench::Inputs::~Inputs() = default;

// The caches of the workload's key on the host, and on the device when `upload` (dev_ exists):
// ckv and kpe for bf16, kv for FP8 (the other format's device buffers freed).
Status DsaBench::Inputs::make_caches(const DsaWorkload& w, uint64_t seed, bool upload) {
  const DsaProblem& p = w.problem;
  const CacheKey key{p.num_pages, p.page_size, p.kv, w.cache_values};
  if (key == cache_key_) return Status::ok();
  cache_key_ = CacheKey{};  // none resident until the new ones are made and uploaded
  make_dsa_caches(p, seed, &host_, w.cache_values);
  const bool fp8 = p.kv == DsaKv::kFp8;
  if (fp8) quantize_dsa_caches(p, &host_);
  Status st;
  if (upload && fp8) {
    dev_->ckv.release();
    dev_->kpe.release();
    st = dev_->kv.upload(host_.kv, "kv_cache upload");
  } else if (upload) {
    dev_->kv.release();
    st = dev_->ckv.upload(host_.ckv, "ckv_cache upload");
    if (st.is_ok()) st = dev_->kpe.upload(host_.kpe, "kpe_cache upload");
  }
  std::vector<uint8_t>().swap(host_.kv);  // on the device now, or never needed there
  MLAKIT_RETURN_IF_ERROR(st);
  cache_key_ = key;
  return Status::ok();
}

Status DsaBench::Inputs::prepare(const DsaWorkload& w, uint64_t seed, bool upload) {
  MLAKIT_RETURN_IF_ERROR(w.problem.validate());
  const size_t entries = size_t(w.problem.num_tokens) * w.problem.topk;
  if (w.indices.size() != entries)
    return Status::invalid_argument("workload " + w.name + ": indices hold " + std::to_string(w.indices.size()) +
                                    " entries, expected T * topk = " + std::to_string(entries));
  workload_ = w;
  reference_.reset();
  make_dsa_queries(w, seed, &host_);
  if (upload && !dev_) dev_ = std::make_unique<Device>();
  MLAKIT_RETURN_IF_ERROR(make_caches(w, seed, upload));
  if (!upload) return Status::ok();
  Device& d = *dev_;
  MLAKIT_RETURN_IF_ERROR(d.q_nope.upload(host_.q_nope, "q_nope upload"));
  MLAKIT_RETURN_IF_ERROR(d.q_pe.upload(host_.q_pe, "q_pe upload"));
  MLAKIT_RETURN_IF_ERROR(d.indices.upload(w.indices, "sparse_indices upload"));
  const size_t rows = size_t(w.problem.num_tokens) * w.problem.num_heads;
  MLAKIT_RETURN_IF_ERROR(d.out.reserve(rows * w.problem.head_dim_ckv * 2, "output"));
  return d.lse.reserve(rows * sizeof(float), "lse");
}

DsaTensors DsaBench::Inputs::tensors() const {
  DsaTensors t;
  if (!dev_) return t;
  t.q_nope = dev_->q_nope.data();
  t.q_pe = dev_->q_pe.data();
  if (workload_.problem.kv == DsaKv::kFp8) {
    t.kv_cache = dev_->kv.data();  // rows contiguous: kv_stride_page 0 = page_size * 656
  } else {
    t.ckv_cache = dev_->ckv.data();
    t.kpe_cache = dev_->kpe.data();
  }
  t.sparse_indices = static_cast<const int32_t*>(dev_->indices.data());
  t.output = dev_->out.data();
  t.lse = static_cast<float*>(dev_->lse.data());
  t.sm_scale = workload_.sm_scale;
  return t;
}

Status DsaBench::Inputs::reference_output(const DsaReferenceOutput** out) {
  if (!reference_) {
    auto ref = std::make_unique<DsaReferenceOutput>();
    DsaHostInputs in;
    in.q_nope = host_.q_nope.data();
    in.q_pe = host_.q_pe.data();
    in.ckv = host_.ckv.data();
    in.kpe = host_.kpe.data();
    in.indices = workload_.indices.data();
    in.sm_scale = workload_.sm_scale;
    MLAKIT_RETURN_IF_ERROR(dsa_reference(workload_.problem, in, IndexPolicy::kTreatInvalidAsPadding, ref.get()));
    reference_ = std::move(ref);
  }
  *out = reference_.get();
  return Status::ok();
}

// output: bf16 against the fp64 reference, contest rule; lse: fp32, -inf allowed where expected.
Status DsaBench::Inputs::outputs(std::vector<CallOutput>* out) {
  if (!dev_) return Status::unsupported("outputs: the inputs were not uploaded (no CUDA device)");
  const DsaReferenceOutput* ref = nullptr;
  MLAKIT_RETURN_IF_ERROR(reference_output(&ref));
  const DsaProblem& p = workload_.problem;
  const int64_t rows = int64_t(p.num_tokens) * p.num_heads, elems = rows * p.head_dim_ckv;
  *out = {{"output", dev_->out.data(), size_t(elems) * 2,
           [ref, elems](const void* host) {
             return compare_contest_bf16(static_cast<const uint16_t*>(host), ref->output.data(), elems);
           }},
          {"lse", dev_->lse.data(), size_t(rows) * sizeof(float), [ref, rows](const void* host) {
             return compare_contest(static_cast<const float*>(host), ref->lse.data(), rows, Tolerance{}, true);
           }}};
  return Status::ok();
}

Status DsaBench::Inputs::reference(std::string* columns) {
  const DsaReferenceOutput* ref = nullptr;
  MLAKIT_RETURN_IF_ERROR(reference_output(&ref));
  int empty = 0;
  double max_lse = -INFINITY;
  for (double l : ref->lse) {
    if (std::isinf(l)) ++empty;
    else max_lse = std::max(max_lse, l);
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%12d %10.3f", empty / workload_.problem.num_heads, max_lse);
  *columns = buf;
  return Status::ok();
}

std::string DsaBench::reference_header() {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%12s %10s", "empty_rows", "max_lse");
  return buf;
}

Status DsaBench::make_suite(const std::string& name, const ShapeArgs& flavours, uint64_t seed,
                            std::vector<DsaWorkload>* out) {
  const auto heads = flavours.find("heads");
  const auto kv = flavours.find("kv");
  DsaSuite suite;
  MLAKIT_RETURN_IF_ERROR(make_dsa_suite(name, seed, &suite, heads == flavours.end() ? 16 : int(heads->second),
                                        kv == flavours.end() ? DsaKv::kBf16 : DsaKv(kv->second)));
  *out = std::move(suite.workloads);
  return Status::ok();
}

Status DsaBench::load_trace(const std::string& dir, const std::string& definition, uint64_t seed,
                            std::vector<DsaWorkload>* out) {
  DsaTraceOptions options;
  options.seed = seed;
  if (!definition.empty()) options.definition = definition;
  DsaSuite suite;
  MLAKIT_RETURN_IF_ERROR(load_dsa_trace(dir, options, &suite));
  *out = std::move(suite.workloads);
  return Status::ok();
}

const std::vector<ShapeOption>& DsaBench::shape_options() {
  static const std::vector<ShapeOption> options = {
      {"t", 1, 1 << 20, true, "number of tokens"},
      {"page-size", 1, 1 << 16, false, "slots per page, default 64"},
      {"topk", 1, 1 << 20, false, "columns of sparse_indices, default 2048"},
      {"num-pages", 1, 1 << 24, false, "pages of the cache, default enough for distinct pages per row"},
      {"valid", 0, 1 << 20, false, "valid leading entries per row, default topk"},
      {"mixed", 0, 1, false, "row t takes valid >> (t % 6) entries: one long row among shorter ones", true},
      // Also on verify, bench and tune: every workload of the suite with this many query heads.
      {"heads", 1, 128, false, "query heads: 16 (default), 32, 64 or 128", false, {}, true,
       {std::begin(kDsaHeadCounts), std::end(kDsaHeadCounts)}},
      // Choice i is DsaKv(i); also on verify, bench and tune: the suite's workloads on that cache.
      {"kv", 0, 1, false, "the cache format: bf16 (default) or fp8", false, {"bf16", "fp8"}, true},
  };
  return options;
}

namespace {

// The problem of `mlakit run`'s shape options: enough pages for every row to pick distinct pages
// unless --num-pages says otherwise.
DsaProblem shape_problem(const ShapeArgs& args) {
  const auto get = [&](const char* name, long long fallback) {
    const auto it = args.find(name);
    return it == args.end() ? fallback : it->second;
  };
  DsaProblem p;
  p.num_tokens = int(get("t", 1));
  p.page_size = int(get("page-size", 64));
  p.topk = int(get("topk", 2048));
  const long long pages_needed = (long long)p.num_tokens * ((p.topk + p.page_size - 1) / p.page_size + 1);
  p.num_pages = int(get("num-pages", std::min<long long>(pages_needed, 1 << 20)));
  p.kv = DsaKv(get("kv", 0));
  p.num_heads = int(get("heads", 16));
  return p;
}

// Host throughput per thread of what a DSA session does, measured on a 2-core x86 runner
// (docs/workbench.md, "Host memory and long runs"): rough on purpose, for warnings only. Both run
// on every hardware thread.
constexpr double kSynthElementsPerSecond = 5e7;
constexpr double kReferenceFlopsPerSecond = 9e9;

// What a session holds for `p`: bf16 caches and queries, the indices twice (the suite's copy and
// the session's), the fp64 reference output and lse, the unit pool of the synthesis; for the FP8
// cache its rows too, held beside the bf16 caches until they are uploaded.
HostFootprint dsa_footprint(const DsaProblem& p, double reference_flops,
                            DsaCacheValues values = DsaCacheValues::kRandn) {
  const double slots = double(p.num_pages) * p.page_size, rows = double(p.num_tokens) * p.num_heads;
  const double width = p.head_dim_ckv + p.head_dim_kpe;
  const double caches = slots * width * 2, queries = rows * width * 2;
  const bool fp8 = p.kv == DsaKv::kFp8;
  const double fp8_rows = fp8 ? slots * dsa_slot_bytes(p) : 0;
  const double indices = 2.0 * double(p.num_tokens) * p.topk * 4;
  const double reference = rows * (p.head_dim_ckv + 1) * 8;
  HostFootprint f;
  f.bytes = caches + fp8_rows + queries + indices + reference + double(p.num_pages) * 4;
  f.detail = "caches " + format_bytes(caches) + (fp8 ? " + FP8 rows " + format_bytes(fp8_rows) : "") +
             ", queries " + format_bytes(queries) + ", indices " + format_bytes(indices) + ", reference " +
             format_bytes(reference);
  const double threads = std::max(1u, std::thread::hardware_concurrency());
  // Quantizing and dequantizing a cache element together cost about what synthesizing it does
  // (dsa-serving's cache on the 2-core runner: 3.0 s against 3.2 s).
  const double cache_work = slots * width * (fp8 ? 2 : 1);
  f.synth_seconds = (cache_work + rows * width) / (kSynthElementsPerSecond * threads);
  // A session keeps the caches while their shape, format and values stay (Inputs::prepare).
  f.shared_key = "pages=" + std::to_string(p.num_pages) + " ps=" + std::to_string(p.page_size) +
                 (fp8 ? " kv=fp8" : "") + (values == DsaCacheValues::kFp8Tiles ? " fp8-tiles" : "");
  f.shared_synth_seconds = cache_work / (kSynthElementsPerSecond * threads);
  f.reference_seconds = reference_flops / (kReferenceFlopsPerSecond * threads);
  return f;
}

}  // namespace

// The footprint of the shape, and the options that size its largest part.
Status DsaBench::shape_footprint(const ShapeArgs& args, HostFootprint* out) {
  const DsaProblem p = shape_problem(args);
  // Every row at topk picks: the most the reference can do for this shape.
  *out = dsa_footprint(p, dsa_cost(p, std::vector<int>(size_t(p.num_tokens), p.topk)).flops);
  const double caches = double(p.num_pages) * p.page_size * (p.head_dim_ckv + p.head_dim_kpe) * 2;
  const std::string t = "--t " + std::to_string(p.num_tokens);
  if (caches < out->bytes / 2) out->sized_by = args.count("topk") ? t + " --topk " + std::to_string(p.topk) : t;
  else if (args.count("num-pages")) out->sized_by = "--num-pages " + std::to_string(p.num_pages);
  else out->sized_by = t + " (its default --num-pages is " + std::to_string(p.num_pages) + ")";
  return Status::ok();
}

// T tokens, each row `valid` top-k picks clustered by page, the rest -1.
Status DsaBench::make_shape(const ShapeArgs& args, uint64_t seed, DsaWorkload* out) {
  if (const auto heads = args.find("heads");
      heads != args.end() &&
      std::find(std::begin(kDsaHeadCounts), std::end(kDsaHeadCounts), heads->second) == std::end(kDsaHeadCounts))
    return Status::invalid_argument("--heads: expected one of 16, 32, 64, 128, got " + std::to_string(heads->second));
  const auto it = args.find("valid");
  return make_dsa_workload(shape_problem(args), it == args.end() ? -1 : int(it->second), seed, out,
                           args.count("mixed") != 0 && args.at("mixed") != 0);
}

WorkloadInfo DsaBench::describe(const DsaWorkload& w) {
  WorkloadInfo i;
  i.name = w.name;
  i.shape = w.problem.to_string();
  i.bucket = dsa_shape_bucket(w.problem);
  i.num_tokens = w.problem.num_tokens;
  i.cost = dsa_cost(w.problem, valid_per_row(w));
  i.host = dsa_footprint(w.problem, i.cost.flops, w.cache_values);
  return i;
}

const OpBench& dsa_bench() {
  static const OpBenchT<DsaBench> bench;
  return bench;
}

}  // namespace mlakit
