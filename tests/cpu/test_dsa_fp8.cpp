// DSA decode over the FP8 cache (mlakit/dsa_fp8.h) on the CPU: the host E4M3 codec and scale rule,
// the row and cache quantizers, the problem's names, planning and dsa_run's checks for the format,
// the roofline counts, the fp8 suites and the workbench's host inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "base/bf16.h"
#include "kernels/dsa_decode/v2_fp8/tiling.h"
#include "mlakit/dsa.h"
#include "mlakit/dsa_fp8.h"
#include "plan/dsa/contract.h"
#include "plan/dsa/cost.h"
#include "plan/op_kernel.h"
#include "reference/dsa/fp8.h"
#include "reference/dsa/reference.h"
#include "runtime/planner.h"
#include "runtime/registry.h"
#include "tiling_checks.h"
#include "workbench/dsa/bench.h"
#include "workloads/dsa/suites.h"
#include "workloads/randn.h"

namespace mlakit {
namespace {

using namespace dsa_fp8;

DsaProblem contest_problem(int num_tokens, DsaKv kv) {
  DsaProblem p;
  p.num_tokens = num_tokens;
  p.num_pages = 8462;
  p.kv = kv;
  return p;
}

bool is_nan_code(int code) { return (code & 0x7f) == 0x7f; }

// The finite code nearest to x by search, ties to the even code (mantissa LSB 0), saturating to
// +-448: what e4m3_from_float must give, found without its arithmetic.
uint8_t nearest_code(float x) {
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const double a = std::fabs(double(x));
  int best = 0;
  for (int c = 1; c <= 0x7e; ++c) {
    const double d = std::fabs(double(fp8::e4m3_to_float(uint8_t(c))) - a);
    const double d_best = std::fabs(double(fp8::e4m3_to_float(uint8_t(best))) - a);
    if (d < d_best || (d == d_best && c % 2 == 0)) best = c;
  }
  return sign | uint8_t(best);
}

// ---- the E4M3 codec -------------------------------------------------------------------------------

TEST(E4m3, EveryCodeRoundTripsAndNanCodesAreNan) {
  float previous = -1.f;
  for (int code = 0; code < 256; ++code) {
    const float v = fp8::e4m3_to_float(uint8_t(code));
    if (is_nan_code(code)) {
      EXPECT_TRUE(std::isnan(v)) << code;
      EXPECT_EQ(fp8::e4m3_from_float(v), uint8_t(code)) << code;  // NaN keeps its sign
      continue;
    }
    EXPECT_EQ(fp8::e4m3_from_float(v), uint8_t(code)) << code << " = " << v;
    EXPECT_EQ(std::signbit(v), code >= 0x80) << code;  // 0x80 is -0
    if (code < 0x7f) {
      EXPECT_GT(v, previous) << code;  // codes 0..0x7e count up
      previous = v;
    }
  }
  EXPECT_EQ(fp8::e4m3_to_float(0x7e), 448.f);
  EXPECT_EQ(fp8::e4m3_to_float(0x01), std::ldexp(1.f, -9));
  EXPECT_EQ(fp8::e4m3_to_float(0x08), std::ldexp(1.f, -6));
}

TEST(E4m3, TiesGoToTheEvenCode) {
  for (int code = 0; code < 0x7e; ++code) {
    for (const float sign : {1.f, -1.f}) {
      const float lo = fp8::e4m3_to_float(uint8_t(code)), hi = fp8::e4m3_to_float(uint8_t(code + 1));
      const float mid = sign * (lo + hi) / 2;  // exact: both have a 4-bit significand
      const uint8_t s = sign < 0 ? 0x80 : 0;
      const uint8_t even = s | uint8_t(code % 2 == 0 ? code : code + 1);
      EXPECT_EQ(fp8::e4m3_from_float(mid), even) << code << " " << mid;
      EXPECT_EQ(fp8::e4m3_from_float(std::nextafter(mid, 0.f)), s | uint8_t(code)) << code;
      EXPECT_EQ(fp8::e4m3_from_float(std::nextafter(mid, sign * 1e9f)), s | uint8_t(code + 1)) << code;
    }
  }
  EXPECT_EQ(fp8::e4m3_from_float(1.0625f), 0x38);  // 1 + 1/16: halfway 1 (even) and 1.125
  EXPECT_EQ(fp8::e4m3_from_float(1.1875f), 0x3a);  // halfway 1.125 and 1.25 (even)
}

TEST(E4m3, SaturatesTo448) {
  for (const float x : {448.f, 449.f, 464.f, 479.f, 480.f, 1e6f, std::numeric_limits<float>::max(),
                        std::numeric_limits<float>::infinity()}) {
    EXPECT_EQ(fp8::e4m3_from_float(x), 0x7e) << x;
    EXPECT_EQ(fp8::e4m3_from_float(-x), 0xfe) << x;
  }
  EXPECT_EQ(fp8::e4m3_from_float(432.f), 0x7e);  // halfway 416 and 448 (even)
  EXPECT_EQ(fp8::e4m3_from_float(431.f), 0x7d);  // 416
}

TEST(E4m3, SubnormalsStepBy2ToTheMinus9) {
  for (int k = 0; k < 8; ++k) EXPECT_EQ(fp8::e4m3_from_float(std::ldexp(float(k), -9)), k) << k;
  EXPECT_EQ(fp8::e4m3_from_float(std::ldexp(1.f, -10)), 0x00);   // half a step: ties to 0
  EXPECT_EQ(fp8::e4m3_from_float(std::ldexp(3.f, -10)), 0x02);   // 1.5 steps: ties to 2
  EXPECT_EQ(fp8::e4m3_from_float(std::ldexp(5.f, -10)), 0x02);   // 2.5 steps: ties to 2
  EXPECT_EQ(fp8::e4m3_from_float(std::ldexp(15.f, -10)), 0x08);  // 7.5 steps round up to 2^-6
  EXPECT_EQ(fp8::e4m3_from_float(-std::ldexp(15.f, -10)), 0x88);
  EXPECT_EQ(fp8::e4m3_from_float(std::nextafter(std::ldexp(15.f, -10), 0.f)), 0x07);
  EXPECT_EQ(fp8::e4m3_from_float(std::numeric_limits<float>::denorm_min()), 0x00);
  EXPECT_EQ(fp8::e4m3_from_float(-0.f), 0x80);
}

// Every finite bf16 value (the quantizer's inputs are bf16 divided by a power of two): the nearest
// code by search.
TEST(E4m3, EveryBf16ValueGetsTheNearestCode) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const float x = bf16_to_float(uint16_t(bits));
    if (!std::isfinite(x)) continue;
    ASSERT_EQ(fp8::e4m3_from_float(x), nearest_code(x)) << std::hex << bits << " = " << x;
  }
}

// ---- the scale rule -------------------------------------------------------------------------------

TEST(TileScale, SmallestPowerOfTwoAtLeastAmaxOver448ClampedAt1e4) {
  for (int k = -13; k <= 10; ++k) {
    const float amax = std::ldexp(448.f, k);
    EXPECT_EQ(fp8::tile_scale(amax), std::ldexp(1.f, k)) << k;  // exactly a power of two times 448
    EXPECT_EQ(fp8::tile_scale(std::nextafter(amax, 1e30f)), std::ldexp(1.f, k + 1)) << k;
    EXPECT_EQ(fp8::tile_scale(std::nextafter(amax, 0.f)), std::ldexp(1.f, k)) << k;
  }
  EXPECT_EQ(fp8::tile_scale(1.75f), std::ldexp(1.f, -8));
  EXPECT_EQ(fp8::tile_scale(1.7578125f), std::ldexp(1.f, -7));  // the next bf16 above 1.75
  // max(amax / 448, 1e-4) rounded up: 1e-4 lies between 2^-14 and 2^-13.
  for (const float amax : {0.f, 1e-30f, 1e-6f, 448e-4f, std::ldexp(448.f, -14)})
    EXPECT_EQ(fp8::tile_scale(amax), std::ldexp(1.f, -13)) << amax;
  EXPECT_EQ(fp8::tile_scale(4.f), 1.f / 64);  // 4 / 448 = 0.0089 -> 2^-6
}

// ---- rows and caches ------------------------------------------------------------------------------

// A row's ckv: randn bf16 with one tile scaled up, one down past the clamp, one negative zero.
std::vector<uint16_t> test_ckv(uint64_t stream) {
  std::vector<uint16_t> ckv(kNopeBytes);
  fill_randn_bf16(ckv.data(), kNopeBytes, 5, stream);
  for (int d = 0; d < kTile; ++d) ckv[size_t(d)] = float_to_bf16(bf16_to_float(ckv[size_t(d)]) * 1000.f);
  for (int d = kTile; d < 2 * kTile; ++d) ckv[size_t(d)] = float_to_bf16(bf16_to_float(ckv[size_t(d)]) * 1e-5f);
  ckv[3 * kTile] = 0x8000;
  return ckv;
}

TEST(QuantizeRow, DequantizedValuesAreWithinHalfAnE4m3StepAndExact) {
  for (uint64_t stream = 0; stream < 8; ++stream) {
    const std::vector<uint16_t> ckv = test_ckv(stream);
    std::vector<uint16_t> kpe(64);
    fill_randn_bf16(kpe.data(), 64, 6, stream);
    uint8_t row[kRowBytes];
    fp8::quantize_row(ckv.data(), kpe.data(), row);
    float scales[kNumScales];
    std::memcpy(scales, row + kScaleOffset, sizeof scales);  // fp32 scales at byte 512
    std::vector<uint16_t> ckv_back(kNopeBytes), kpe_back(64);
    fp8::dequantize_row(row, ckv_back.data(), kpe_back.data());
    for (int t = 0; t < kNumScales; ++t) {
      float amax = 0;
      for (int d = t * kTile; d < (t + 1) * kTile; ++d) amax = std::fmax(amax, std::fabs(bf16_to_float(ckv[size_t(d)])));
      EXPECT_EQ(scales[t], fp8::tile_scale(amax)) << t;
    }
    for (int d = 0; d < kNopeBytes; ++d) {
      const float x = bf16_to_float(ckv[size_t(d)]), s = scales[d / kTile];
      const float q = fp8::e4m3_to_float(row[d]);
      // Half the code spacing around x / s: 2^-10 among subnormals, else 2^(exponent - 4).
      const float a = std::fabs(x / s);
      const float half_step = a < std::ldexp(1.f, -6) ? std::ldexp(1.f, -10) : std::ldexp(1.f, std::ilogb(a) - 4);
      EXPECT_LE(std::fabs(q * s - x), half_step * s) << d;
      EXPECT_EQ(bf16_to_float(ckv_back[size_t(d)]), q * s) << d;  // exact in bf16
    }
    EXPECT_EQ(row[3 * kTile], 0x80);  // -0 stays -0
    EXPECT_EQ(std::memcmp(row + kRopeOffset, kpe.data(), kRopeBytes), 0);  // rope copied verbatim
    EXPECT_EQ(kpe_back, kpe);
  }
}

TEST(QuantizeCache, IndependentOfTheThreadCountAndRowByRow) {
  const int64_t slots = 20000;  // enough for several threads (one per 4096 slots)
  std::vector<uint16_t> ckv(size_t(slots) * 512), kpe(size_t(slots) * 64);
  fill_randn_bf16(ckv.data(), int64_t(ckv.size()), 3, 1);
  fill_randn_bf16(kpe.data(), int64_t(kpe.size()), 3, 2);
  std::vector<uint8_t> one(size_t(slots) * kRowBytes), many(one.size(), 0xAB), any(one.size());
  fp8::quantize_cache(ckv.data(), kpe.data(), slots, one.data(), 1);
  fp8::quantize_cache(ckv.data(), kpe.data(), slots, many.data(), 3);
  fp8::quantize_cache(ckv.data(), kpe.data(), slots, any.data(), 0);
  EXPECT_EQ(one, many);
  EXPECT_EQ(one, any);
  uint8_t row[kRowBytes];
  for (const int64_t s : {int64_t(0), int64_t(4095), int64_t(4096), slots / 3, slots - 1}) {
    fp8::quantize_row(ckv.data() + s * 512, kpe.data() + s * 64, row);
    EXPECT_EQ(std::memcmp(row, one.data() + s * kRowBytes, kRowBytes), 0) << s;
  }
  std::vector<uint16_t> ckv1(ckv.size()), kpe1(kpe.size()), ckv3(ckv.size()), kpe3(kpe.size());
  fp8::dequantize_cache(one.data(), slots, ckv1.data(), kpe1.data(), 1);
  fp8::dequantize_cache(one.data(), slots, ckv3.data(), kpe3.data(), 3);
  EXPECT_EQ(ckv1, ckv3);
  EXPECT_EQ(kpe1, kpe3);
  EXPECT_EQ(kpe1, kpe);
}

// ---- problem names, bucket and cost -------------------------------------------------------------

TEST(DsaFp8Problem, NamesAndBucketSayFp8) {
  const DsaProblem bf16 = contest_problem(3, DsaKv::kBf16), fp8 = contest_problem(3, DsaKv::kFp8);
  EXPECT_EQ(fp8.to_string(), bf16.to_string() + " kv=fp8");
  EXPECT_EQ(dsa_shape_bucket(bf16), "T4.h16.ckv512.kpe64.ps64.k2048");
  EXPECT_EQ(dsa_shape_bucket(fp8), "T4.h16.ckv512.kpe64.ps64.k2048.fp8");
  EXPECT_EQ(OpContract<DsaProblem>::dtype(bf16), "bf16");
  EXPECT_EQ(OpContract<DsaProblem>::dtype(fp8), "fp8");
  DsaProblem bad = fp8;
  bad.kv = DsaKv(2);
  const Status s = bad.validate();
  EXPECT_NE(s.message().find("DsaProblem.kv: expected 0 (bf16) or 1 (fp8), got 2"), std::string::npos) << s.message();
}

TEST(DsaFp8Cost, ASlotMoves656BytesInsteadOf1152) {
  const std::vector<int> valid = {2048, 100, 0};
  const Cost bf16 = dsa_cost(contest_problem(3, DsaKv::kBf16), valid);
  const Cost fp8 = dsa_cost(contest_problem(3, DsaKv::kFp8), valid);
  EXPECT_EQ(dsa_slot_bytes(contest_problem(1, DsaKv::kBf16)), 1152.0);
  EXPECT_EQ(dsa_slot_bytes(contest_problem(1, DsaKv::kFp8)), double(kRowBytes));
  EXPECT_EQ(fp8.rows, 2148);
  EXPECT_EQ(fp8.gathered_bytes, 2148.0 * 656);
  EXPECT_EQ(bf16.gathered_bytes, 2148.0 * 1152);
  // q, indices, output and lse are the same for both caches; the FLOPs too (the math is bf16).
  EXPECT_EQ(bf16.bytes - bf16.gathered_bytes, fp8.bytes - fp8.gathered_bytes);
  EXPECT_EQ(bf16.bytes - bf16.gathered_bytes, 3.0 * 16 * 1152 + 4.0 * 3 * 2048 + 3.0 * 16 * (1024 + 4));
  EXPECT_EQ(fp8.flops, bf16.flops);
}

// ---- planning and dsa_run's checks ----------------------------------------------------------------

DeviceFacts h200() {
  DeviceFacts f;
  EXPECT_TRUE(find_known_device("h200", &f).is_ok());
  return f;
}

// A dry plan (H200 of the table, no GPU) for an fp8 problem with the registry's default fp8 kernel.
DsaPlan dry_fp8_plan(const DsaProblem& p) {
  static const DeviceFacts facts = h200();
  DsaPlan plan;
  DsaPlanOptions o;
  o.device_facts = &facts;
  EXPECT_TRUE(dsa_plan(p, o, &plan).is_ok());
  return plan;
}

TEST(DsaFp8Plan, ABf16KernelKeyIsRefusedForAnFp8Problem) {
  const DeviceFacts facts = h200();
  DsaPlanOptions o;
  o.device_facts = &facts;
  o.kernel_key = "dsa_decode.v2_fused.bf16";
  DsaPlan plan;
  Status s = dsa_plan(contest_problem(2, DsaKv::kFp8), o, &plan);
  EXPECT_EQ(s.code(), Code::kUnsupported);
  EXPECT_NE(s.message().find("kernel_key: 'dsa_decode.v2_fused.bf16' reads a bf16 cache; the problem's is fp8"),
            std::string::npos)
      << s.message();
  EXPECT_TRUE(plan.empty());
  o.kernel_key.clear();  // the default for fp8: the fp8 kernel, never a bf16 one
  s = dsa_plan(contest_problem(2, DsaKv::kFp8), o, &plan);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_EQ(plan.kernel_key(), "dsa_decode.v2_fp8.fp8");
}

// The cluster merge (c1): 2..8 splits of the decode only, no workspace; in the search space, never
// the default (it lost where measured).
TEST(DsaFp8Plan, ClusterMergeRulesDefaultAndWorkspace) {
  const DeviceFacts facts = h200();
  const DsaKernel& k = *find_kernel_as<DsaKernel>("dsa_decode.v2_fp8.fp8");
  const DsaKernel& floor = *find_kernel_as<DsaKernel>("dsa_decode.floor_fp8.fp8");
  const auto why_at = [&](const DsaKernel& kernel, int t, const char* name) {
    return why(kernel, contest_problem(t, DsaKv::kFp8), name, facts);
  };
  EXPECT_EQ(why_at(k, 8, "s8n64x8m1p4g1c1"), "ok");
  EXPECT_EQ(why_at(k, 64, "s2n64x4m1p4g1c1"), "ok");
  // A cluster is gang-scheduled: 16 tokens x 8 splits need not be co-resident (the global merge's do).
  EXPECT_EQ(why_at(k, 64, "s8n64x8m1p4g1c1"), "ok");
  EXPECT_NE(why_at(k, 64, "s8n64x8m1p4g1").find("must be resident at once"), std::string::npos);
  EXPECT_NE(why_at(k, 8, "s16n64x8m1p4g1c1").find("2..8 splits"), std::string::npos);
  EXPECT_NE(why_at(k, 8, "s1n64x8m1p4g1c1").find("2..8 splits"), std::string::npos);
  EXPECT_NE(why_at(k, 8, "s8n64x8m1p4g1c2").find("c (cluster merge) must be 0"), std::string::npos);
  EXPECT_NE(why_at(floor, 8, "s8n64x8m1p4g1c1").find("merges nothing"), std::string::npos);
  dsa_v2_fp8::Tiling t;
  ASSERT_TRUE(dsa_v2_fp8::Tiling::parse("s8n64x8m1p4g1c1", &t).is_ok());
  EXPECT_EQ(t.cluster, 1);
  EXPECT_EQ(t.name(), "s8n64x8m1p4g1c1");
  EXPECT_EQ(workspace_of(k, contest_problem(8, DsaKv::kFp8), "s8n64x8m1p4g1c1", facts), 0u);
  EXPECT_GT(workspace_of(k, contest_problem(8, DsaKv::kFp8), "s8n64x8m1p4g1", facts), 0u);
  for (int tokens : {1, 8, 16, 64, 128}) {
    const std::string d = k.default_tiling(contest_problem(tokens, DsaKv::kFp8), facts);
    ASSERT_TRUE(dsa_v2_fp8::Tiling::parse(d, &t).is_ok()) << d;
    EXPECT_EQ(t.cluster, 0) << tokens << " " << d;
    EXPECT_EQ(why(k, contest_problem(tokens, DsaKv::kFp8), d, facts), "ok") << d;
  }
  int clustered = 0;
  for (const std::string& name : k.search_space(contest_problem(8, DsaKv::kFp8))) {
    ASSERT_TRUE(dsa_v2_fp8::Tiling::parse(name, &t).is_ok()) << name;
    clustered += t.cluster;
  }
  EXPECT_GT(clustered, 0);
  for (const std::string& name : floor.search_space(contest_problem(8, DsaKv::kFp8)))
    EXPECT_EQ(name.find('c'), std::string::npos) << name;
  // The other kernels' tilings have no cluster field at all: their names cannot carry one.
  for (const char* other : {"dsa_decode.v2_fused.bf16", "dsa_decode.v1_splitk.bf16", "dsa_decode.floor_gather.bf16"}) {
    const DsaKernel& o = *find_kernel_as<DsaKernel>(other);
    const std::string c = o.default_tiling(contest_problem(8, DsaKv::kBf16), facts) + "c1";
    const Status s = o.check(contest_problem(8, DsaKv::kBf16), c, facts);
    EXPECT_FALSE(s.is_ok()) << other;
    EXPECT_NE(s.message().find("unexpected 'c1'"), std::string::npos) << other << ": " << s.message();
  }
}

// The default takes 64 heads per CTA (h64) where it was measured faster: T x H >= 1024 at 64 heads,
// >= 768 at 128 (FP8 devlog steps 18 and 19); 16 and 32 heads never.
TEST(DsaFp8Plan, SixtyFourHeadsPerCtaFromTheMeasuredThresholds) {
  const DeviceFacts facts = h200();
  const DsaKernel& k = *find_kernel_as<DsaKernel>("dsa_decode.v2_fp8.fp8");
  const auto cta_heads = [&](int tokens, int heads) {
    DsaProblem p = contest_problem(tokens, DsaKv::kFp8);
    p.num_heads = heads;
    const std::string name = k.default_tiling(p, facts);
    EXPECT_EQ(why(k, p, name, facts), "ok") << tokens << " x " << heads << ": " << name;
    dsa_v2_fp8::Tiling t;
    EXPECT_TRUE(dsa_v2_fp8::Tiling::parse(name, &t).is_ok()) << name;
    return t.cta_heads;
  };
  EXPECT_EQ(cta_heads(5, 128), 16);
  EXPECT_EQ(cta_heads(6, 128), 64);
  EXPECT_EQ(cta_heads(7, 128), 64);
  EXPECT_EQ(cta_heads(15, 64), 16);
  EXPECT_EQ(cta_heads(16, 64), 64);
  EXPECT_EQ(cta_heads(64, 32), 16);
  EXPECT_EQ(cta_heads(128, 16), 16);
}

// dsa_run checks the tensors before the plan's device: a dry plan reaches every check of the format.
TEST(DsaFp8Run, CachePointersAndThePageStrideAreChecked) {
  DsaProblem p = contest_problem(1, DsaKv::kFp8);
  const DsaPlan plan = dry_fp8_plan(p);
  ASSERT_FALSE(plan.empty());
  const size_t need = plan.workspace_bytes();
  const std::unique_ptr<void, decltype(&std::free)> ws(std::aligned_alloc(16, need + 16), &std::free);
  alignas(16) static char buf[4096];
  DsaTensors x;
  x.q_nope = x.q_pe = x.output = buf;
  x.sparse_indices = reinterpret_cast<const int32_t*>(buf);
  x.lse = reinterpret_cast<float*>(buf);
  x.sm_scale = 0.1f;
  const auto run_message = [&] { return dsa_run(plan, x, ws.get(), need, nullptr).message(); };
  EXPECT_NE(run_message().find("kv_cache: null pointer"), std::string::npos) << run_message();
  x.kv_cache = buf + 8;
  EXPECT_NE(run_message().find("kv_cache: must be 16-byte aligned"), std::string::npos) << run_message();
  x.kv_cache = buf;
  x.ckv_cache = buf;
  EXPECT_NE(run_message().find("ckv_cache: must be null for the FP8 cache"), std::string::npos) << run_message();
  x.ckv_cache = nullptr;
  x.kpe_cache = buf;
  EXPECT_NE(run_message().find("kpe_cache: must be null for the FP8 cache"), std::string::npos) << run_message();
  x.kpe_cache = nullptr;
  const int64_t page = int64_t(p.page_size) * kRowBytes;  // 41984
  for (const int64_t bad : {page - 16, page + 8, int64_t(1)}) {
    x.kv_stride_page = bad;
    EXPECT_NE(run_message().find("kv_stride_page: expected a multiple of 16 bytes >= page_size * 656 (41984), got " +
                                 std::to_string(bad)),
              std::string::npos)
        << run_message();
  }
  // Contiguous, and FlashMLA's padded pages (one spare row each): the checks pass, the dry plan stops.
  for (const int64_t good : {int64_t(0), page, page + kRowBytes, page + 16}) {
    x.kv_stride_page = good;
    EXPECT_NE(run_message().find("without a live device"), std::string::npos) << good << ": " << run_message();
  }
}

TEST(DsaFp8Run, ABf16ProblemRefusesKvCache) {
  const DeviceFacts facts = h200();
  DsaPlanOptions o;
  o.device_facts = &facts;
  DsaPlan plan;
  ASSERT_TRUE(dsa_plan(contest_problem(1, DsaKv::kBf16), o, &plan).is_ok());
  alignas(16) static char buf[4096];
  DsaTensors x;
  x.q_nope = x.q_pe = x.ckv_cache = x.kpe_cache = x.kv_cache = x.output = buf;
  x.sparse_indices = reinterpret_cast<const int32_t*>(buf);
  x.lse = reinterpret_cast<float*>(buf);
  const Status s = dsa_run(plan, x, nullptr, 0, nullptr);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("kv_cache: must be null for a bf16 cache"), std::string::npos) << s.message();
}

// ---- suites ----------------------------------------------------------------------------------------

DsaSuite make_suite(const std::string& name, DsaKv kv = DsaKv::kBf16, uint64_t seed = 3) {
  DsaSuite s;
  const Status st = make_dsa_suite(name, seed, &s, 16, kv);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return s;
}

// Each suite on the FP8 cache: the same workloads first (name, uuid, sm_scale, indices, the
// problem but kv), so the same bf16 values before quantization; dsa-edge has FP8 edges after them.
TEST(DsaFp8Suites, SameWorkloadsAsTheBf16SuitesWithKvFp8) {
  for (const char* base : {"dsa-contest", "dsa-serving", "dsa-edge"}) {
    SCOPED_TRACE(base);
    const DsaSuite bf16 = make_suite(base), fp8 = make_suite(base, DsaKv::kFp8);
    EXPECT_EQ(fp8.name, base);
    ASSERT_GE(fp8.workloads.size(), bf16.workloads.size());
    for (size_t i = 0; i < fp8.workloads.size(); ++i) {
      const DsaWorkload& f = fp8.workloads[i];
      EXPECT_EQ(f.problem.kv, DsaKv::kFp8) << f.name;
      if (i >= bf16.workloads.size()) {
        EXPECT_EQ(f.name.rfind("edge-fp8-", 0), 0u) << f.name;  // the flavour's own, named so
        continue;
      }
      const DsaWorkload& b = bf16.workloads[i];
      EXPECT_EQ(b.problem.kv, DsaKv::kBf16) << b.name;
      EXPECT_EQ(b.cache_values, DsaCacheValues::kRandn) << b.name;
      EXPECT_EQ(f.name, b.name);
      EXPECT_EQ(f.uuid, b.uuid);
      EXPECT_EQ(f.sm_scale, b.sm_scale);
      EXPECT_EQ(f.indices, b.indices) << f.name;
      EXPECT_EQ(f.cache_values, b.cache_values) << f.name;
      DsaProblem as_bf16 = f.problem;
      as_bf16.kv = DsaKv::kBf16;
      EXPECT_EQ(as_bf16, b.problem) << f.name;
    }
    EXPECT_EQ(fp8.workloads.size() > bf16.workloads.size(), std::string(base) == "dsa-edge");
  }
}

// What matters for the format is all in dsa-edge on the FP8 cache: padding anywhere, empty rows, T = 1, repeats,
// out-of-range indices, page sizes 1, 16, 64 and 128, and the tiles of the scale rule.
TEST(DsaFp8Suites, EdgeCoversTheFormat) {
  const DsaSuite s = make_suite("dsa-edge", DsaKv::kFp8);
  std::set<std::string> names;
  std::set<int> page_sizes, tokens;
  int tile_workloads = 0, empty_rows = 0;
  for (const DsaWorkload& w : s.workloads) {
    names.insert(w.name);
    page_sizes.insert(w.problem.page_size);
    tokens.insert(w.problem.num_tokens);
    tile_workloads += w.cache_values == DsaCacheValues::kFp8Tiles;
    for (int v : valid_per_row(w)) empty_rows += v == 0;
  }
  for (const char* n : {"edge-pad-anywhere", "edge-repeat", "edge-out-of-range", "edge-first-last-slot",
                        "edge-fp8-tiles-T4", "edge-fp8-ps16-T4", "edge-fp8-ps128-T4"})
    EXPECT_TRUE(names.count(n)) << n;
  EXPECT_EQ(page_sizes, (std::set<int>{1, 16, 64, 128}));
  EXPECT_TRUE(tokens.count(1));
  EXPECT_EQ(tile_workloads, 1);
  EXPECT_GT(empty_rows, 3);
}

// ---- host inputs --------------------------------------------------------------------------------

TEST(DsaFp8HostData, TheReferenceReadsTheDequantizedCacheAndKvIsItsRows) {
  DsaProblem p;
  p.num_pages = 40;
  p.page_size = 16;
  p.kv = DsaKv::kFp8;
  DsaHostData data;
  make_dsa_caches(p, 9, &data);
  const std::vector<uint16_t> ckv0 = data.ckv, kpe0 = data.kpe;
  quantize_dsa_caches(p, &data);
  ASSERT_EQ(data.kv.size(), size_t(p.num_slots()) * kRowBytes);
  std::vector<uint8_t> rows(data.kv.size());
  fp8::quantize_cache(ckv0.data(), kpe0.data(), p.num_slots(), rows.data(), 1);
  EXPECT_EQ(data.kv, rows);  // the rows of the synthesized bf16 values
  std::vector<uint16_t> ckv1(ckv0.size()), kpe1(kpe0.size());
  fp8::dequantize_cache(rows.data(), p.num_slots(), ckv1.data(), kpe1.data(), 1);
  EXPECT_EQ(data.ckv, ckv1);  // and ckv, kpe what they decode to
  EXPECT_EQ(data.kpe, kpe0);
  EXPECT_NE(data.ckv, ckv0);  // quantization changed values
}

float scale_of(const uint8_t* row, int tile) {
  float s;
  std::memcpy(&s, row + kScaleOffset + 4 * tile, sizeof s);
  return s;
}

// The tiles of dsa-edge's FP8 edges (host_data.cpp): slot s by s % 16, tile (s / 16) % 4.
TEST(DsaFp8HostData, Fp8TilesHitTheScaleRulesCases) {
  DsaProblem p;
  p.num_pages = 16;
  p.page_size = 64;
  p.kv = DsaKv::kFp8;
  DsaHostData randn, tiles;
  make_dsa_caches(p, 4, &randn);
  make_dsa_caches(p, 4, &tiles, DsaCacheValues::kFp8Tiles);
  EXPECT_EQ(tiles.kpe, randn.kpe);
  quantize_dsa_caches(p, &tiles);
  const float clamp = std::ldexp(1.f, -13);
  int nonzero_clamped_codes = 0;
  for (int64_t s = 0; s < p.num_slots(); ++s) {
    SCOPED_TRACE(s);
    const uint8_t* row = tiles.kv.data() + s * kRowBytes;
    const int t = int((s / 16) % 4);
    const uint8_t* codes = row + t * kTile;
    const auto all_codes = [&](uint8_t c) { return std::all_of(codes, codes + kTile, [c](uint8_t x) { return x == c; }); };
    // Tile 0 keeps one sign (its large tiles cannot cancel against negative terms); only the
    // all -0 tile of s % 16 == 3 carries the sign bit there.
    if (!(t == 0 && s % 16 == 3))
      EXPECT_TRUE(std::none_of(row, row + kTile, [](uint8_t x) { return (x & 0x80) != 0; }));
    switch (s % 16) {
      case 1: EXPECT_EQ(scale_of(row, t), clamp); EXPECT_TRUE(all_codes(0x00)); break;
      case 3: EXPECT_EQ(scale_of(row, t), clamp); EXPECT_TRUE(all_codes(0x80)); break;
      case 5:
        for (int i = 0; i < 4; ++i) EXPECT_EQ(scale_of(row, i), clamp);
        break;
      case 7:
        EXPECT_EQ(scale_of(row, t), clamp);
        for (int d = 0; d < kTile; ++d) nonzero_clamped_codes += (codes[d] & 0x7f) >= 0x08;
        break;
      case 9:
        EXPECT_EQ(scale_of(row, t), std::ldexp(1.f, -8));
        EXPECT_EQ(codes[s % kTile] & 0x7f, 0x7e);  // 1.75 / 2^-8 = 448
        break;
      case 11: EXPECT_EQ(scale_of(row, t), std::ldexp(1.f, -7)); break;
      case 13:
        if (s % 64 == 13) EXPECT_GE(scale_of(row, t), 0.5f);
        else EXPECT_LE(scale_of(row, t), 1.f / 64);
        break;
      default: EXPECT_LE(scale_of(row, t), 1.f / 64); break;  // randn: amax under 7
    }
  }
  EXPECT_GT(nonzero_clamped_codes, 100);  // the clamped small tiles keep normal codes
}

// An FP8 workload's reference (the workbench's Inputs, no device) is dsa_reference on the
// dequantized cache; a bf16 workload of the same name and shape reads the unquantized one.
TEST(DsaFp8Inputs, TheReferenceRunsOnTheDequantizedCache) {
  DsaSuite bf16 = make_suite("dsa-edge"), fp8 = make_suite("dsa-edge", DsaKv::kFp8);
  const DsaWorkload& wb = bf16.workloads[1];  // edge-pad-anywhere
  const DsaWorkload& wf = fp8.workloads[1];
  ASSERT_EQ(wf.name, "edge-pad-anywhere");
  DsaBench::Inputs in;
  const DsaReferenceOutput* ref_fp8 = nullptr;
  ASSERT_TRUE(in.prepare(wf, 3, false).is_ok());
  ASSERT_TRUE(in.reference_output(&ref_fp8).is_ok());
  const std::vector<double> out_fp8 = ref_fp8->output;

  DsaHostData host;
  make_dsa_queries(wf, 3, &host);
  make_dsa_caches(wf.problem, 3, &host);
  std::vector<uint8_t> rows(size_t(wf.problem.num_slots()) * kRowBytes);
  fp8::quantize_cache(host.ckv.data(), host.kpe.data(), wf.problem.num_slots(), rows.data());
  fp8::dequantize_cache(rows.data(), wf.problem.num_slots(), host.ckv.data(), host.kpe.data());
  DsaHostInputs x{host.q_nope.data(), host.q_pe.data(), host.ckv.data(), host.kpe.data(), wf.indices.data(),
                  wf.sm_scale};
  DsaReferenceOutput expected;
  ASSERT_TRUE(dsa_reference(wf.problem, x, IndexPolicy::kTreatInvalidAsPadding, &expected).is_ok());
  EXPECT_EQ(out_fp8, expected.output);
  EXPECT_EQ(ref_fp8->lse, expected.lse);

  const DsaReferenceOutput* ref_bf16 = nullptr;
  ASSERT_TRUE(in.prepare(wb, 3, false).is_ok());  // same shape, other format: new caches
  ASSERT_TRUE(in.reference_output(&ref_bf16).is_ok());
  EXPECT_NE(ref_bf16->output, out_fp8);
  EXPECT_EQ(in.tensors().kv_cache, nullptr);  // nothing on a device here
}

// A session's footprint counts the FP8 rows it holds beside the bf16 caches until the upload.
TEST(DsaFp8Inputs, TheFootprintCountsTheFp8Rows) {
  const WorkloadInfo b = DsaBench::describe(make_suite("dsa-contest").workloads[0]);
  const WorkloadInfo f = DsaBench::describe(make_suite("dsa-contest", DsaKv::kFp8).workloads[0]);
  EXPECT_DOUBLE_EQ(f.host.bytes - b.host.bytes, 8462.0 * 64 * 656);
  EXPECT_NE(f.host.detail.find(" + FP8 rows "), std::string::npos) << f.host.detail;
  EXPECT_NE(f.host.shared_key, b.host.shared_key);
  EXPECT_EQ(f.cost.gathered_bytes, double(f.cost.rows) * 656);
  EXPECT_EQ(f.shape, b.shape + " kv=fp8");
  EXPECT_EQ(f.bucket, b.bucket + ".fp8");
}

}  // namespace
}  // namespace mlakit
