// DSA's q and caches: randn bf16 (workloads/randn.h), q per workload, caches per cache shape.
#include "workloads/dsa/suites.h"
#include "workloads/dsa/synth.h"
#include "workloads/randn.h"

namespace mlakit {

void make_dsa_queries(const DsaWorkload& w, uint64_t seed, DsaHostData* data) {
  const DsaProblem& p = w.problem;
  const int64_t rows = int64_t(p.num_tokens) * p.num_heads;
  const uint64_t name = synth::hash_string(w.name);
  data->q_nope.resize(size_t(rows * p.head_dim_ckv));
  data->q_pe.resize(size_t(rows * p.head_dim_kpe));
  fill_randn_bf16(data->q_nope.data(), int64_t(data->q_nope.size()), seed, randn_stream("q_nope", name));
  fill_randn_bf16(data->q_pe.data(), int64_t(data->q_pe.size()), seed, randn_stream("q_pe", name));
}

void make_dsa_caches(const DsaProblem& p, uint64_t seed, DsaHostData* data) {
  const int64_t slots = p.num_slots();
  const uint64_t shape = synth::mix(uint64_t(p.num_pages), uint64_t(p.page_size));
  data->ckv.resize(size_t(slots * p.head_dim_ckv));
  data->kpe.resize(size_t(slots * p.head_dim_kpe));
  fill_randn_bf16(data->ckv.data(), int64_t(data->ckv.size()), seed, randn_stream("ckv_cache", shape));
  fill_randn_bf16(data->kpe.data(), int64_t(data->kpe.size()), seed, randn_stream("kpe_cache", shape));
}

}  // namespace mlakit
