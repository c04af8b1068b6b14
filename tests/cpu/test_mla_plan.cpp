// mla_decode's plan layer and run-time checks without a GPU: MlaProblem validation naming the
// field, == and the hash; tiling names; the cost; the layout rules; the public entry points'
// errors before any CUDA call; planning while no kernel is registered.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <unordered_map>

#include "mlakit/device.h"
#include "kernels/mla_decode/v1_paged/tiling.h"
#include "mlakit/mla.h"
#include "plan/mla/contract.h"
#include "plan/mla/cost.h"
#include "plan/mla/semantics.h"
#include "runtime/mla/layout.h"
#include "runtime/registry.h"

namespace mlakit {
namespace {

MlaProblem serving_problem() {
  MlaProblem p;
  p.batch = 32;
  p.num_pages = 2049;
  p.max_pages = 64;
  return p;
}

void expect_invalid(const MlaProblem& p, const std::string& field, const std::string& got) {
  const Status s = p.validate();
  ASSERT_FALSE(s.is_ok()) << p.to_string();
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("MlaProblem." + field + ": expected"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("got " + got), std::string::npos) << s.message();
}

TEST(MlaProblem, ValidShapes) {
  MlaProblem p = serving_problem();
  EXPECT_TRUE(p.validate().is_ok()) << p.validate().to_string();
  for (int h : {16, 32, 64, 128})
    for (int s : {1, 2, 3, 4})
      for (int ps : {1, 16, 64, 1024}) {
        p.num_heads = h;
        p.seq_q = s;
        p.page_size = ps;
        p.causal = s % 2;
        EXPECT_TRUE(p.validate().is_ok()) << p.to_string();
      }
  p.batch = 65536;
  EXPECT_TRUE(p.validate().is_ok());
}

TEST(MlaProblem, RejectsEachFieldWithItsName) {
  const struct {
    int MlaProblem::*field;
    int value;
    const char* name;
  } cases[] = {{&MlaProblem::batch, 0, "batch"},           {&MlaProblem::batch, 65537, "batch"},
               {&MlaProblem::seq_q, 0, "seq_q"},           {&MlaProblem::seq_q, 5, "seq_q"},
               {&MlaProblem::num_heads, 0, "num_heads"},   {&MlaProblem::num_heads, 129, "num_heads"},
               {&MlaProblem::head_dim_ckv, 576, "head_dim_ckv"}, {&MlaProblem::head_dim_kpe, 32, "head_dim_kpe"},
               {&MlaProblem::page_size, 0, "page_size"},   {&MlaProblem::page_size, 1025, "page_size"},
               {&MlaProblem::num_pages, 0, "num_pages"},   {&MlaProblem::max_pages, -1, "max_pages"},
               {&MlaProblem::causal, 2, "causal"}};
  for (const auto& c : cases) {
    MlaProblem p = serving_problem();
    p.*c.field = c.value;
    expect_invalid(p, c.name, std::to_string(c.value));
  }
}

TEST(MlaProblem, LengthsMustFitInt32) {
  MlaProblem p = serving_problem();
  p.page_size = 1024;
  p.max_pages = 1 << 21;  // 2^31 rows: one past the largest int32 length
  const Status s = p.validate();
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("2147483648 rows"), std::string::npos) << s.message();
  p.max_pages = (1 << 21) - 1;
  EXPECT_TRUE(p.validate().is_ok());
}

TEST(MlaProblem, ToStringAndBucket) {
  EXPECT_EQ(serving_problem().to_string(), "b=32 s_q=1 h=16 ckv=512 kpe=64 pages=2049 ps=64 max_pages=64 causal=0");
  MlaProblem p = serving_problem();
  p.batch = 33;
  p.seq_q = 2;
  p.causal = 1;
  EXPECT_EQ(mla_shape_bucket(p), "b64.s2.h16.ckv512.kpe64.ps64.c1");
  p.num_pages = 7;  // where rows come from, not how many: the same bucket
  p.max_pages = 3;
  EXPECT_EQ(mla_shape_bucket(p), "b64.s2.h16.ckv512.kpe64.ps64.c1");
  p.batch = 1;
  EXPECT_EQ(mla_shape_bucket(p).substr(0, 4), "b1.s");
}

TEST(MlaProblem, EqualityAndHashCoverEveryField) {
  const MlaProblem base = serving_problem();
  const std::hash<MlaProblem> hash;
  int MlaProblem::*fields[] = {&MlaProblem::batch,     &MlaProblem::seq_q,     &MlaProblem::num_heads,
                               &MlaProblem::head_dim_ckv, &MlaProblem::head_dim_kpe, &MlaProblem::num_pages,
                               &MlaProblem::page_size, &MlaProblem::max_pages, &MlaProblem::causal};
  static_assert(sizeof(fields) / sizeof(fields[0]) * sizeof(int) == sizeof(MlaProblem),
                "a field was added to MlaProblem: list it here");
  std::unordered_map<MlaProblem, int> seen{{base, -1}};
  for (int i = 0; i < int(sizeof(fields) / sizeof(fields[0])); ++i) {
    MlaProblem p = base;
    p.*fields[i] += 1;
    EXPECT_FALSE(p == base) << i;
    EXPECT_NE(hash(p), hash(base)) << i;
    EXPECT_TRUE(seen.emplace(p, i).second) << i;
  }
  EXPECT_EQ(seen.at(serving_problem()), -1);
}

TEST(MlaV1Tiling, NamesLeaveGatherOutAtItsDefault) {
  mla_v1::Tiling t;
  t.ctas = 132;
  EXPECT_EQ(t.name(), "c132x4p2");
  t.gather = 0;
  EXPECT_EQ(t.name(), "c132x4p2g0");
  t.gather = 2;
  t.rows = 64;
  EXPECT_EQ(t.name(), "c132x4p2g2m64");
  for (const char* name : {"c132x4p2", "c132x4p2g0", "c1x1p1g2", "c264x6p4", "c132x4p4g2m64", "c66x4p4m64", "c132x4p2w0",
                           "c9x4p4g3m64w1048576", "c132x4p4g3m64o1", "c8x4p4g2m64w0o1"}) {
    mla_v1::Tiling parsed;
    ASSERT_TRUE(mla_v1::Tiling::parse(name, &parsed).is_ok()) << name;
    EXPECT_EQ(parsed.name(), name);
  }
  mla_v1::Tiling parsed;
  ASSERT_TRUE(mla_v1::Tiling::parse("c132x4p2g1", &parsed).is_ok());  // the default spelled out
  EXPECT_EQ(parsed.name(), "c132x4p2");
  EXPECT_EQ(parsed.gather, 1);
  ASSERT_TRUE(mla_v1::Tiling::parse("c132x4p2m16", &parsed).is_ok());
  EXPECT_EQ(parsed.name(), "c132x4p2");
  EXPECT_EQ(parsed.rows, 16);
  ASSERT_TRUE(mla_v1::Tiling::parse("c132x4p2w8", &parsed).is_ok());
  EXPECT_EQ(parsed.name(), "c132x4p2");
  EXPECT_EQ(parsed.whole, 8);
  ASSERT_TRUE(mla_v1::Tiling::parse("c132x4p4g3m64o0", &parsed).is_ok());
  EXPECT_EQ(parsed.name(), "c132x4p4g3m64");
  EXPECT_EQ(parsed.order, 0);
}

TEST(MlaV1Tiling, BadNamesAreRejectedWithTheForm) {
  const struct {
    const char* name;
    const char* why;
  } cases[] = {{"", "expected the form c<ctas>x<stages>p<producers>"},
               {"c132x4", "expected the form"},
               {"x4p2c132", "expected the form"},
               {"s16n64x2m4", "expected the form"},
               {"c132x4p2z1", "unexpected 'z1'"},
               {"c132x4p2m64g2", "unexpected 'g2' (the optional fields, in this order: g, m, w, o)"},
               {"c132x4p4m64o1w0", "unexpected 'w0'"},
               {"c132x4p4m64o2", "o must be 0 (lockstep pair) or 1 (seesaw)"},
               {"c132x4p4m64o", "expected the form"},
               {"c132x4p2w8m64", "unexpected 'm64'"},
               {"c132x4p2w", "expected the form"},
               {"c132x4p2w1048577", "w must be 0..1048576"},
               {"c132x4p2m32", "m must be 16 or 64"},
               {"c132x4p2m", "expected the form"},
               {"c132x4p2g", "expected the form"},
               {"c0x4p2", "c must be >= 1"},
               {"c132x0p2", "x must be >= 1"},
               {"c132x4p2g4", "g must be 0, 1, 2 or 3"},
               {"c-1x4p2", "expected the form"},
               {"C132x4p2", "expected the form"}};
  for (const auto& c : cases) {
    mla_v1::Tiling t;
    const Status s = mla_v1::Tiling::parse(c.name, &t);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << c.name;
    EXPECT_NE(s.message().find(c.why), std::string::npos) << c.name << ": " << s.message();
    EXPECT_NE(s.message().find(std::string("got '") + c.name + "'"), std::string::npos) << s.message();
  }
}

TEST(MlaSemantics, ClampedLengthsAndTheCausalRule) {
  MlaProblem p = serving_problem();  // max_seqlen 4096
  EXPECT_EQ(mla_request_rows(p, -5), 0);
  EXPECT_EQ(mla_request_rows(p, 4097), 4096);
  EXPECT_EQ(mla_request_rows(p, INT32_MAX), 4096);
  p.seq_q = 4;
  EXPECT_EQ(mla_query_rows(p, 10, 0), 10);  // not causal: every query sees every row
  p.causal = 1;
  EXPECT_EQ(mla_query_rows(p, 10, 0), 7);
  EXPECT_EQ(mla_query_rows(p, 10, 3), 10);
  EXPECT_EQ(mla_query_rows(p, 2, 0), 0);  // 2 - 3 < 0
  EXPECT_EQ(mla_query_rows(p, 2, 2), 1);
  EXPECT_EQ(mla_request_pages(p, 0), 0);
  EXPECT_EQ(mla_request_pages(p, 65), 2);
}

TEST(MlaCost, RowsOnceFlopsPerQuery) {
  MlaProblem p;
  p.batch = 3;
  p.seq_q = 2;
  p.causal = 1;
  p.max_pages = 4;  // 256 rows at most
  p.num_pages = 13;
  const Cost c = mla_cost(p, {100, 0, 1000});  // 1000 is clamped to 256
  EXPECT_EQ(c.rows, 356);
  EXPECT_DOUBLE_EQ(c.gathered_bytes, 356.0 * 1152);
  // Query rows: (99 + 100) + 0 + (255 + 256).
  EXPECT_DOUBLE_EQ(c.flops, 710.0 * 16 * (2 * 576 + 2 * 512));
  const double queries = 3 * 2 * 16;
  const double table = 4.0 * (2 + 0 + 4) + 4.0 * 3;
  EXPECT_DOUBLE_EQ(c.bytes, 356.0 * 1152 + queries * 1152 + queries * (1024 + 4) + table);
}

// Distinct, aligned, never dereferenced: the checks run on pointer values only.
MlaTensors fake_tensors() {
  MlaTensors t;
  t.q_nope = reinterpret_cast<const void*>(uintptr_t(0x10000));
  t.q_pe = reinterpret_cast<const void*>(uintptr_t(0x20000));
  t.ckv_cache = reinterpret_cast<const void*>(uintptr_t(0x30000));
  t.kpe_cache = reinterpret_cast<const void*>(uintptr_t(0x40000));
  t.block_table = reinterpret_cast<const int32_t*>(uintptr_t(0x50000));
  t.cache_seqlens = reinterpret_cast<const int32_t*>(uintptr_t(0x60000));
  t.output = reinterpret_cast<void*>(uintptr_t(0x70000));
  t.lse = reinterpret_cast<float*>(uintptr_t(0x80000));
  t.sm_scale = 0.1f;
  return t;
}

TEST(MlaLayout, PointersNameTheArgument) {
  EXPECT_TRUE(mla_layout::check_pointers(fake_tensors()).is_ok());
  MlaTensors t = fake_tensors();
  t.block_table = nullptr;
  EXPECT_EQ(mla_layout::check_pointers(t).message(), "block_table: null pointer");
  t = fake_tensors();
  t.kpe_cache = static_cast<const char*>(t.kpe_cache) + 8;
  EXPECT_EQ(mla_layout::check_pointers(t).message(), "kpe_cache: must be 16-byte aligned (rows are read with 16-byte copies)");
  t = fake_tensors();
  t.lse = reinterpret_cast<float*>(uintptr_t(0x80002));
  EXPECT_EQ(mla_layout::check_pointers(t).message(), "lse: must be 4-byte aligned");
  t = fake_tensors();
  t.sm_scale = NAN;
  EXPECT_NE(mla_layout::check_pointers(t).message().find("sm_scale: must be finite"), std::string::npos);
  t = fake_tensors();
  t.counters = reinterpret_cast<uint32_t*>(uintptr_t(0x80004));
  EXPECT_EQ(mla_layout::check_pointers(t).message(), "counters: must be 16-byte aligned");
}

TEST(MlaLayout, CombinedViewsPassAndStridesAreChecked) {
  MlaProblem p = serving_problem();
  p.seq_q = 2;
  MlaTensors t = fake_tensors(), r;
  ASSERT_TRUE(mla_layout::resolve_strides(p, t, &r).is_ok());  // all contiguous
  EXPECT_EQ(r.q_nope_stride_b, 2 * 16 * 512);
  EXPECT_EQ(r.kpe_stride_page, 64 * 64);
  EXPECT_EQ(r.block_table_stride_b, 64);
  // q [b, s_q, h, 576] and cache [pages, 64, 576], as the engines pass them.
  t.q_nope_stride_h = t.q_pe_stride_h = 576;
  t.q_nope_stride_s = t.q_pe_stride_s = 16 * 576;
  t.q_nope_stride_b = t.q_pe_stride_b = 2 * 16 * 576;
  t.ckv_stride_row = t.kpe_stride_row = 576;
  t.ckv_stride_page = t.kpe_stride_page = 64 * 576;
  t.block_table_stride_b = 100;
  ASSERT_TRUE(mla_layout::resolve_strides(p, t, &r).is_ok());
  EXPECT_EQ(r.kpe_stride_page, 64 * 576);
  EXPECT_EQ(r.block_table_stride_b, 100);
  MlaTensors bad = t;
  bad.q_pe_stride_h = 32;
  EXPECT_EQ(mla_layout::resolve_strides(p, bad, &r).message(), "q_pe_stride_h: expected >= 64 elements, got 32");
  bad = t;
  bad.ckv_stride_row = 516;
  EXPECT_NE(mla_layout::resolve_strides(p, bad, &r).message().find("ckv_stride_row: must be a multiple of 8"),
            std::string::npos);
  bad = t;
  bad.ckv_stride_page = 63 * 576;
  EXPECT_NE(mla_layout::resolve_strides(p, bad, &r).message().find("ckv_stride_page: expected >= 36864"),
            std::string::npos);
  bad = t;
  bad.q_nope_stride_s = 576;  // a transposed q: heads outside the query tokens
  bad.q_nope_stride_h = 2 * 576;
  EXPECT_NE(mla_layout::resolve_strides(p, bad, &r).message().find("q_nope_stride_s: expected >= 18432"),
            std::string::npos);
  bad = t;
  bad.block_table_stride_b = 63;
  EXPECT_EQ(mla_layout::resolve_strides(p, bad, &r).message(), "block_table_stride_b: expected >= max_pages (64), got 63");
  // A dimension of size 1 never uses its stride: not checked, contiguous in the result.
  p.seq_q = 1;
  bad = t;
  bad.q_nope_stride_s = 3;
  ASSERT_TRUE(mla_layout::resolve_strides(p, bad, &r).is_ok());
  EXPECT_EQ(r.q_nope_stride_s, 16 * 512);
}

TEST(MlaApi, ErrorsBeforeAnyCudaCall) {
  MlaPlan plan;
  const MlaTensors t = fake_tensors();
  Status s = mla_run(plan, t, nullptr, 0, nullptr);
  EXPECT_EQ(s.message(), "plan: empty; make it with mla_plan");
  const int32_t* table = t.block_table;
  s = mla_check_inputs(serving_problem(), nullptr, 0, t.cache_seqlens, nullptr);
  EXPECT_EQ(s.message(), "block_table: null pointer");
  s = mla_check_inputs(serving_problem(), table, 0, nullptr, nullptr);
  EXPECT_EQ(s.message(), "cache_seqlens: null pointer");
  s = mla_check_inputs(serving_problem(), table, 10, t.cache_seqlens, nullptr);
  EXPECT_EQ(s.message(), "block_table_stride_b: expected >= max_pages (64), got 10");
  MlaProblem p = serving_problem();
  p.num_heads = 129;
  EXPECT_NE(mla_check_inputs(p, table, 0, t.cache_seqlens, nullptr).message().find("MlaProblem.num_heads"),
            std::string::npos);
}

// 8 heads (Kimi-K2 at TP 8, DeepSeek at TP 16) is a valid call the kernels do not run: planning
// answers unsupported (NotImplementedError in Python, where mlakit.compat pads to 16), not invalid.
TEST(MlaApi, UnservedHeadCountsAreUnsupportedNotInvalid) {
  DeviceFacts h200;
  ASSERT_TRUE(find_known_device("h200", &h200).is_ok());
  MlaPlanOptions o;
  o.device_facts = &h200;
  for (int h : {1, 8, 9, 63, 126}) {
    MlaProblem p = serving_problem();
    p.num_heads = h;
    EXPECT_TRUE(p.validate().is_ok()) << p.to_string();
    MlaPlan plan;
    const Status s = mla_plan(p, o, &plan);
    EXPECT_EQ(s.code(), Code::kUnsupported) << s.to_string();
    EXPECT_NE(s.message().find(std::to_string(h) + " heads"), std::string::npos) << s.message();
  }
}

// Until a kernel registers, planning says so; once one does, this test is the reminder that it
// must plan the serving shape on the H200 of the table.
TEST(MlaApi, PlanningNamesTheRegisteredKernels) {
  DeviceFacts h200;
  ASSERT_TRUE(find_known_device("h200", &h200).is_ok());
  MlaPlanOptions o;
  o.device_facts = &h200;
  MlaPlan plan;
  const Status s = mla_plan(serving_problem(), o, &plan);
  if (kernel_keys("mla_decode").empty()) {
    EXPECT_EQ(s.code(), Code::kUnsupported);
    EXPECT_EQ(s.message(), "no mla_decode kernel is registered for bf16 with 16 heads (registered: none)");
  } else {
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    mla_v1::Tiling t;
    ASSERT_TRUE(mla_v1::Tiling::parse(plan.tiling(), &t).is_ok()) << plan.tiling();
    EXPECT_EQ(t.ctas % h200.num_sms, 0) << plan.tiling();
    EXPECT_EQ(plan.device(), -1);
  }
  MlaProblem bad = serving_problem();
  bad.seq_q = 9;
  EXPECT_NE(mla_plan(bad, o, &plan).message().find("MlaProblem.seq_q"), std::string::npos);
}


// v1_paged's validation reasons on a known chip, without a GPU.
TEST(MlaV1Paged, ValidationNamesTheRule) {
  DeviceFacts h200;
  ASSERT_TRUE(find_known_device("h200", &h200).is_ok());
  MlaPlanOptions o;
  o.device_facts = &h200;
  o.kernel_key = "mla_decode.v1_paged.bf16";
  MlaPlan plan;
  ASSERT_TRUE(mla_plan(serving_problem(), o, &plan).is_ok());
  EXPECT_EQ(plan.tiling(), "c132x4p2");
  EXPECT_GT(plan.workspace_bytes(), size_t(4096));
  const auto reason = [&](const char* tiling, MlaProblem p) {
    o.tiling = tiling;
    const Status s = mla_plan(p, o, &plan);
    o.tiling.clear();
    return s.message();
  };
  MlaProblem p = serving_problem();
  EXPECT_NE(reason("c133x4p2", p).find("c (CTAs) must be in [1, 132]"), std::string::npos) << reason("c133x4p2", p);
  EXPECT_NE(reason("c132x4p2g0", p).find("g (gather) must be 1"), std::string::npos);
  EXPECT_NE(reason("c132x5p1", p).find("is not compiled; compiled: x3p1 x4p1 x4p2 x4p4"), std::string::npos);
  p.seq_q = 4;
  p.num_heads = 128;  // 32 groups of (query position, 16-head block), 8 of 64 query rows
  EXPECT_NE(reason("c16x4p2", p).find("must be in [32, 132]"), std::string::npos) << reason("c16x4p2", p);
  EXPECT_EQ(reason("c128x4p2", p), "");
  EXPECT_NE(reason("c7x4p4g2m64", p).find("must be in [8, 132]"), std::string::npos) << reason("c7x4p4g2m64", p);
  EXPECT_EQ(reason("c8x4p4g2m64", p), "");
  EXPECT_NE(reason("c132x4p2m64", p).find("m64 (64 query rows per CTA) runs 4 stages, a producer warpgroup"),
            std::string::npos)
      << reason("c132x4p2m64", p);
  EXPECT_NE(reason("c132x4p4g2", p).find("g (gather) must be 1 with 16 query rows per CTA"), std::string::npos);
  EXPECT_EQ(reason("c8x4p4g2m64o1", p), "");
  EXPECT_NE(reason("c132x4p2o1", p).find("o (the consumer pair's schedule) must be 0, or 1 (seesaw) with m64"),
            std::string::npos)
      << reason("c132x4p2o1", p);
}

// The default takes 64 query rows per CTA (m64) from 64 query rows per request (s_q x heads), or
// from 32 with tensor-map stages (gather 3: pages of a multiple of 32 rows), 16 below; the partial
// slots follow the rows.
TEST(MlaV1Paged, DefaultRowsFollowQueryRowsPerRequest) {
  DeviceFacts h200;
  ASSERT_TRUE(find_known_device("h200", &h200).is_ok());
  MlaPlanOptions o;
  o.device_facts = &h200;
  o.kernel_key = "mla_decode.v1_paged.bf16";
  const struct {
    int heads, seq_q, page_size;
    const char* tiling;
  } cases[] = {{16, 1, 64, "c132x4p2"},        {16, 2, 64, "c132x4p4g3m64o1"}, {32, 1, 64, "c132x4p4g3m64o1"},
               {16, 4, 64, "c132x4p4g3m64o1"}, {64, 1, 64, "c132x4p4g3m64o1"}, {128, 3, 64, "c132x4p4g3m64o1"},
               {16, 1, 32, "c132x4p2"},        {16, 2, 32, "c132x4p4g3m64o1"}, {16, 2, 16, "c132x4p2"},
               {32, 1, 1, "c132x4p2"},         {16, 4, 16, "c132x4p4g2m64o1"}, {128, 1, 1, "c132x4p4g2m64o1"}};
  size_t narrow_bytes = 0;
  for (const auto& c : cases) {
    MlaProblem p = serving_problem();
    p.num_heads = c.heads;
    p.seq_q = c.seq_q;
    p.num_pages = p.num_pages * p.page_size / c.page_size;
    p.page_size = c.page_size;
    MlaPlan plan;
    ASSERT_TRUE(mla_plan(p, o, &plan).is_ok()) << p.to_string();
    EXPECT_EQ(plan.tiling(), c.tiling) << p.to_string();
    mla_v1::Tiling t;
    ASSERT_TRUE(mla_v1::Tiling::parse(plan.tiling(), &t).is_ok()) << plan.tiling();
    if (t.rows == 16) narrow_bytes = plan.workspace_bytes();
    else EXPECT_EQ(plan.workspace_bytes() - 4096, 4 * (narrow_bytes - 4096)) << p.to_string();
  }
}

}  // namespace
}  // namespace mlakit
