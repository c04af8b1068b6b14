// The DSA workspace contract (kernels/dsa_decode/common/workspace.h): one zeroed workspace serves
// every plan of the op one after the other. The counter region is zero again after every call,
// whatever kernel, tiling and head count ran (a counter left behind would let the next call's
// split rows merge before their partials exist), and every plan computes the right result on a
// workspace that other plans, v1_splitk's included, have written their partials and h64 its
// compacted slots into.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "kernels/dsa_decode/common/workspace.h"
#include "mlakit/device.h"
#include "mlakit/dsa.h"
#include "reference/compare.h"
#include "reference/dsa/reference.h"
#include "workbench/device_buffer.h"
#include "workloads/dsa/suites.h"

namespace mlakit {
namespace {

uint64_t fresh_seed() { return std::random_device{}() | (uint64_t(std::random_device{}()) << 32); }

// One workload's device inputs (bf16 caches, or the FP8 cache of the -fp8 suites) and reference.
struct Inputs {
  DeviceBuffer q_nope, q_pe, ckv, kpe, kv, indices, out, lse;
  DsaReferenceOutput ref;
  bool fp8 = false;

  void prepare(const DsaWorkload& w, uint64_t seed, bool fp8_cache) {
    fp8 = fp8_cache;
    const DsaProblem& p = w.problem;
    DsaHostData h;
    make_dsa_queries(w, seed, &h);
    make_dsa_caches(p, seed, &h, w.cache_values);
    if (fp8) quantize_dsa_caches(p, &h);  // ckv and kpe become the dequantized values
    const DsaHostInputs in{h.q_nope.data(), h.q_pe.data(), h.ckv.data(), h.kpe.data(), w.indices.data(), w.sm_scale};
    ASSERT_TRUE(dsa_reference(p, in, IndexPolicy::kTreatInvalidAsPadding, &ref).is_ok());
    ASSERT_TRUE(q_nope.upload(h.q_nope, "q_nope").is_ok());
    ASSERT_TRUE(q_pe.upload(h.q_pe, "q_pe").is_ok());
    if (fp8) {
      ASSERT_TRUE(kv.upload(h.kv, "kv_cache").is_ok());
    } else {
      ASSERT_TRUE(ckv.upload(h.ckv, "ckv").is_ok());
      ASSERT_TRUE(kpe.upload(h.kpe, "kpe").is_ok());
    }
    ASSERT_TRUE(indices.upload(w.indices, "indices").is_ok());
    const size_t rows = size_t(p.num_tokens) * p.num_heads;
    ASSERT_TRUE(out.reserve(rows * p.head_dim_ckv * 2, "output").is_ok());
    ASSERT_TRUE(lse.reserve(rows * sizeof(float), "lse").is_ok());
  }

  DsaTensors tensors(const DsaWorkload& w) const {
    DsaTensors t;
    t.q_nope = q_nope.data();
    t.q_pe = q_pe.data();
    if (fp8) {
      t.kv_cache = kv.data();
    } else {
      t.ckv_cache = ckv.data();
      t.kpe_cache = kpe.data();
    }
    t.sparse_indices = static_cast<const int32_t*>(indices.data());
    t.output = out.data();
    t.lse = static_cast<float*>(lse.data());
    t.sm_scale = w.sm_scale;
    return t;
  }
};

// Runs `plan` on `workspace` with poisoned outputs and checks output and lse against the reference.
void run_and_check(const DsaPlan& plan, const DsaWorkload& w, const Inputs& in, DeviceBuffer& workspace) {
  const DsaProblem& p = plan.problem();
  const size_t rows = size_t(p.num_tokens) * p.num_heads;
  std::vector<uint16_t> out(rows * p.head_dim_ckv);
  std::vector<float> lse(rows);
  const DsaTensors t = in.tensors(w);
  ASSERT_EQ(cudaMemset(t.output, 0xFF, out.size() * 2), cudaSuccess);
  ASSERT_EQ(cudaMemset(t.lse, 0xFF, lse.size() * 4), cudaSuccess);
  const Status s = dsa_run(plan, t, workspace.data(), workspace.bytes(), nullptr);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  ASSERT_EQ(cudaMemcpy(out.data(), t.output, out.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(lse.data(), t.lse, lse.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  const CompareReport o = compare_contest_bf16(out.data(), in.ref.output.data(), int64_t(out.size()));
  const CompareReport l = compare_contest(lse.data(), in.ref.lse.data(), int64_t(rows), Tolerance{}, true);
  EXPECT_TRUE(o.ok()) << plan.kernel_key() << " " << plan.tiling() << " output: " << o.summary();
  EXPECT_TRUE(l.ok()) << plan.kernel_key() << " " << plan.tiling() << " lse: " << l.summary();
}

// The counter region of the workspace is all zero.
void expect_zero_counters(const DeviceBuffer& workspace, const std::string& what) {
  const size_t n = std::min(workspace.bytes(), dsa_workspace::kCounterBytes);
  std::vector<uint8_t> host(n);
  ASSERT_EQ(cudaMemcpy(host.data(), workspace.data(), n, cudaMemcpyDeviceToHost), cudaSuccess);
  const auto bad = std::find_if(host.begin(), host.end(), [](uint8_t b) { return b != 0; });
  EXPECT_EQ(bad, host.end()) << what << ": byte " << (bad - host.begin()) << " of the counter region is "
                             << int(bad == host.end() ? 0 : *bad) << " after the call";
}

struct Case {
  const char* suite;
  int heads;
  DsaKv kv;
  const char* workload;
  const char* kernel;  // "" = the default
  const char* tiling;  // "" = the default
};

TEST(DsaWorkspace, EveryCallLeavesTheCountersZeroAndServesTheNextPlan) {
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  DeviceFacts facts;
  ASSERT_TRUE(query_device(0, &facts).is_ok());
  if (facts.sm() != 90) GTEST_SKIP() << "the DSA kernels need sm_90a; found " << facts.describe();
  // Split rows of every merge: the default hybrid instance (16 splits, the general merge), the
  // 2-4-split twin, wgmma, pooled rows, h32, h64 (its compacted slots in the workspace too), the
  // FP8 kernel; and the v2 plans after v1's.
  const Case cases[] = {
      {"dsa-contest", 16, DsaKv::kBf16, "contest-16", "dsa_decode.v1_splitk.bf16", ""},
      {"dsa-contest", 16, DsaKv::kBf16, "contest-16", "", ""},
      {"dsa-contest", 16, DsaKv::kBf16, "contest-04", "", ""},
      {"dsa-contest", 16, DsaKv::kBf16, "contest-16", "", "s4n64x4m1p4"},
      {"dsa-contest", 16, DsaKv::kBf16, "contest-16", "", "s16n64x4m1p2g1"},
      {"dsa-contest", 16, DsaKv::kBf16, "contest-16", "", "s16n64x4m1p2b1"},
      {"dsa-contest", 64, DsaKv::kBf16, "contest-16", "", "s8n64x4m1p2h32"},
      {"dsa-contest", 64, DsaKv::kBf16, "contest-16", "", "s4n64x4m1p4g2w1h64"},
      {"dsa-contest", 128, DsaKv::kBf16, "contest-16", "", "s8n64x4m1p4g2w1h64"},
      {"dsa-contest", 128, DsaKv::kBf16, "contest-16", "", ""},
      {"dsa-contest", 16, DsaKv::kFp8, "contest-16", "", ""},
      {"dsa-contest", 16, DsaKv::kBf16, "contest-16", "dsa_decode.v1_splitk.bf16", ""},
      {"dsa-contest", 16, DsaKv::kBf16, "contest-09", "", ""},
  };
  DeviceBuffer workspace;  // zero-filled once, reused for every plan (mlakit/dsa.h)
  for (const Case& c : cases) {
    const uint64_t seed = fresh_seed();
    const std::string what = std::string(c.suite) + " --heads " + std::to_string(c.heads) +
                             (c.kv == DsaKv::kFp8 ? " --kv fp8" : "") + "/" + c.workload + " " +
                             (*c.kernel ? c.kernel : "default") + " " + (*c.tiling ? c.tiling : "default") +
                             " seed " + std::to_string(seed);
    SCOPED_TRACE(what);
    DsaSuite suite;
    ASSERT_TRUE(make_dsa_suite(c.suite, seed, &suite, c.heads, c.kv).is_ok()) << c.suite;
    const auto w = std::find_if(suite.workloads.begin(), suite.workloads.end(),
                                [&](const DsaWorkload& x) { return x.name == c.workload; });
    ASSERT_NE(w, suite.workloads.end()) << c.workload;
    Inputs in;
    ASSERT_NO_FATAL_FAILURE(in.prepare(*w, seed, c.kv == DsaKv::kFp8));
    DsaPlanOptions o;
    o.kernel_key = c.kernel;
    o.tiling = c.tiling;
    DsaPlan plan;
    const Status s = dsa_plan(w->problem, o, &plan);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    ASSERT_TRUE(workspace.reserve(plan.workspace_bytes(), "workspace").is_ok());
    for (int call = 0; call < 2; ++call) {  // the second call finds what the first left
      ASSERT_NO_FATAL_FAILURE(run_and_check(plan, *w, in, workspace));
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      ASSERT_NO_FATAL_FAILURE(expect_zero_counters(workspace, what));
    }
  }
}

}  // namespace
}  // namespace mlakit
