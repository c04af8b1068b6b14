// Kernel plans without a GPU: defaults valid for H100/H200, bad tilings rejected with the reason
// a person reads, the arch gate, tiling names, and plans that only the planner makes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <type_traits>

#include "kernels/dsa_decode/v1_splitk/tiling.h"
#include "kernels/dsa_decode/v2_fp8/tiling.h"
#include "kernels/dsa_decode/v2_fused/tiling.h"
#include "mlakit/device.h"
#include "plan/dsa/contract.h"
#include "runtime/planner.h"
#include "runtime/registry.h"
#include "tiling_checks.h"

namespace mlakit {
namespace {

DeviceFacts device(const char* name) {
  DeviceFacts f;
  EXPECT_TRUE(find_known_device(name, &f).is_ok()) << name;
  return f;
}

DsaProblem contest(int tokens) {
  DsaProblem p;
  p.num_tokens = tokens;
  p.num_pages = 8462;
  return p;
}

const DsaKernel& v1() {
  const DsaKernel* k = find_kernel_as<DsaKernel>("dsa_decode.v1_splitk.bf16");
  EXPECT_NE(k, nullptr);
  return *k;
}

TEST(Plan, DefaultTilingIsValidOnHopperForEveryTokenCount) {
  for (const char* name : {"H100", "H200"}) {
    const DeviceFacts dev = device(name);
    for (int t : {1, 2, 7, 8, 16, 64, 128, 256, 1024}) {
      for (int topk : {256, 512, 1024, 2048, 4096}) {
        DsaProblem p = contest(t);
        p.topk = topk;
        const std::string tiling = v1().default_tiling(p, dev);
        Status s = v1().check(p, tiling, dev);
        EXPECT_TRUE(s.is_ok()) << name << " T=" << t << " topk=" << topk << " " << tiling << ": "
                               << s.message();
      }
    }
  }
}

TEST(Plan, DefaultTilingFillsTheMachineForSmallT) {
  const DeviceFacts dev = device("H200");
  const auto splits = [&](int tokens) {
    dsa_v1::Tiling t;
    EXPECT_TRUE(dsa_v1::Tiling::parse(v1().default_tiling(contest(tokens), dev), &t).is_ok());
    return t.num_splits;
  };
  EXPECT_EQ(splits(1), 32);  // one 64-slot tile per CTA
  EXPECT_EQ(splits(8), 16);
  EXPECT_EQ(splits(128), 1);  // fused epilogue, no merge
}

TEST(Plan, SharedMemoryOverflowIsRejectedWithReason) {
  Status s = v1().check(contest(8), "s16n64x3m4", device("H200"));
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), Code::kUnsupported);
  EXPECT_NE(s.message().find("shared-memory plan"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("exceeds the 227.0 KB per-block limit of sm_90"), std::string::npos) << s.message();
}

TEST(Plan, TwoStagesDoNotFitTheRtx5090) {
  // The arch gate fires first on sm_120; the shared-memory rule is checked on an sm_90 part
  // with a small opt-in limit to show both reasons are reachable.
  DeviceFacts small = device("H200");
  small.smem_per_block_optin = 99 * 1024;
  Status s = v1().check(contest(8), "s16n64x2m4", small);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("exceeds the 99.0 KB"), std::string::npos) << s.message();
}

TEST(Plan, BadFieldsAreRejectedWithReason) {
  const DeviceFacts dev = device("H200");
  struct Bad {
    const char* tiling;
    const char* reason;
  } cases[] = {
      {"s16n32x2m4", "block_n=32"},
      {"s16n64x4m4", "stages must be 1, 2 or 3"},
      {"s64n64x2m4", "num_splits must be in [1, 32]"},
      {"s16n64x2m3", "merge_head_groups must be 4, 8 or 16"},
  };
  for (const Bad& b : cases) {
    Status s = v1().check(contest(8), b.tiling, dev);
    ASSERT_FALSE(s.is_ok()) << b.tiling;
    EXPECT_NE(s.message().find(b.reason), std::string::npos) << s.message();
  }
  DsaProblem big = contest(1);
  big.topk = 4096;
  Status s = v1().check(big, "s1n64x2m4", dev);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("exceeds the 2048 one CTA compacts; use num_splits >= 2"), std::string::npos)
      << s.message();
  DsaProblem heads = contest(1);
  heads.num_heads = 64;
  s = v1().check(heads, "s16n64x2m4", dev);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("num_heads=64"), std::string::npos) << s.message();
}

TEST(Plan, SearchSpaceHoldsValidAndInvalidTilings) {
  const DeviceFacts dev = device("H200");
  int valid = 0, invalid = 0;
  for (const std::string& t : v1().search_space(contest(8)))
    (v1().check(contest(8), t, dev).is_ok() ? valid : invalid)++;
  EXPECT_GT(valid, 8);
  EXPECT_GT(invalid, 0);  // 3 stages: the tuner prints why it skips them
}

TEST(Plan, WorkspaceOnlyForSplits) {
  const DeviceFacts dev = device("H200");
  EXPECT_EQ(workspace_of(v1(), contest(128), "s1n64x2m4", dev), 0u);
  // 8 tokens x 16 splits x 16 heads x (512 + 2) floats
  EXPECT_EQ(workspace_of(v1(), contest(8), "s16n64x2m4", dev), 4096 + size_t(8) * 16 * 16 * 514 * 4);
}

TEST(ArchGate, KernelsDeclareAndCheckTheirArch) {
  const DsaKernel& k = v1();
  EXPECT_EQ(k.info().arch.describe(), "sm_90a");
  EXPECT_TRUE(check_kernel_arch(k, device("H100")).is_ok());
  EXPECT_TRUE(check_kernel_arch(k, device("H200")).is_ok());
  Status s = check_kernel_arch(k, device("RTX 5090"));
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("needs sm_90a; found sm_120 (NVIDIA GeForce RTX 5090)"), std::string::npos)
      << s.message();
  // sm_90a code does not run on Blackwell either: the "a" features are not forward compatible.
  EXPECT_FALSE(check_kernel_arch(k, device("B200")).is_ok());
  EXPECT_TRUE(check_arch(ArchRequirement{8, 0, false}, device("B200")).is_ok());
}

TEST(DeviceTable, HasTheChipsOfThePlan) {
  EXPECT_EQ(device("H200").num_sms, 132);
  EXPECT_EQ(device("H200").l2_bytes, 60 * 1024 * 1024);
  EXPECT_EQ(device("B200").sm(), 100);
  EXPECT_EQ(device("RTX 5090").sm(), 120);
  EXPECT_EQ(device("RTX 5090").smem_per_block_optin, 99 * 1024);
  DeviceFacts f;
  EXPECT_EQ(find_known_device("no such chip", &f).code(), Code::kNotFound);
}

TEST(Tiling, NameRoundTripsAndBadNamesAreRejected) {
  dsa_v1::Tiling t{8, 64, 1, 16}, u;
  ASSERT_TRUE(dsa_v1::Tiling::parse(t.name(), &u).is_ok());
  EXPECT_EQ(u.name(), t.name());
  EXPECT_EQ(t.name(), "s8n64x1m16");
  for (const char* bad : {"", "s8", "s8n64x1m16z", "x", "s0n64x1m4", "s16n64x2m4p2"}) {
    Status s = dsa_v1::Tiling::parse(bad, &u);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("tiling"), std::string::npos);
  }
}

// Each variant's names: its own fields, the optional ones written only away from their defaults,
// in one order; a field the variant does not have cannot be named.
TEST(Tiling, SingleLaunchFieldsAreNamedOnlyAwayFromTheirDefaults) {
  dsa_v2::Tiling t;
  ASSERT_TRUE(dsa_v2::Tiling::parse("s8n64x4m1p2", &t).is_ok());
  EXPECT_EQ(t.producers, 2);
  EXPECT_EQ(t.gather, 0);
  EXPECT_EQ(t.mma, 0);
  EXPECT_EQ(t.name(), "s8n64x4m1p2");
  ASSERT_TRUE(dsa_v2::Tiling::parse("s1n32x3m1g1w1", &t).is_ok());
  EXPECT_EQ(t.producers, 1);
  EXPECT_EQ(t.gather, 1);
  EXPECT_EQ(t.mma, 1);
  EXPECT_EQ(t.name(), "s1n32x3m1g1w1");
  ASSERT_TRUE(dsa_v2::Tiling::parse("s2n64x4m1p2h32", &t).is_ok());
  EXPECT_EQ(t.cta_heads, 32);
  EXPECT_EQ(t.name(), "s2n64x4m1p2h32");
  ASSERT_TRUE(dsa_v2::Tiling::parse("s2n64x4m1h16", &t).is_ok());  // the default, left out of the name
  EXPECT_EQ(t.name(), "s2n64x4m1");
  ASSERT_TRUE(dsa_v2::Tiling::parse("s8n64x4m1p2h32b1", &t).is_ok());
  EXPECT_EQ(t.pool, 1);
  EXPECT_EQ(t.name(), "s8n64x4m1p2h32b1");
  dsa_v2_fp8::Tiling f;
  ASSERT_TRUE(dsa_v2_fp8::Tiling::parse("s8n64x8m1p4g1c1", &f).is_ok());
  EXPECT_EQ(f.cluster, 1);
  EXPECT_EQ(f.name(), "s8n64x8m1p4g1c1");
  dsa_v1::Tiling v;
  ASSERT_TRUE(dsa_v1::Tiling::parse("s16n64x2m4", &v).is_ok());  // v1's names are unchanged
  EXPECT_EQ(v.name(), "s16n64x2m4");
  for (const char* bad : {"s8n64x4m1b1h32", "s8n64x4m1b-1", "s8n64x4m1p", "s8n64x4m1w1p2", "s8n64x4m1p2p2", "s8n64x4m1p0", "s8n64x4m1q1",
                          "s8n64x4m1h32p2", "s8n64x4m1h0", "s8n64x4m1c1h32", "s8n64x4m1c-1", "s8n64x4m1p4c1"}) {
    const Status s = dsa_v2::Tiling::parse(bad, &t);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find(bad), std::string::npos) << s.message();
  }
  EXPECT_FALSE(dsa_v2_fp8::Tiling::parse("s8n64x4m1p2b1", &f).is_ok());  // v2_fp8 pools no rows
}

// --explain says how a split row merges: the twin of launches with 2-4 splits (the default hybrid
// mma.sync instances and h64), the general merge otherwise, and which rows stay whole.
TEST(V2Fused, ExplainNamesTheMergeAndTheWholeRows) {
  const DsaKernel& v2 = *find_kernel_as<DsaKernel>("dsa_decode.v2_fused.bf16");
  const auto explain = [&](const DsaProblem& p, const char* name) {
    TilingValues t;
    EXPECT_TRUE(v2.check(p, name, device("H200"), &t).is_ok()) << name;
    return v2.explain(p, t);
  };
  const std::string twin = "the 2-4-split twin", whole = "rows of at most 96 valid slots stay whole";
  const std::string few = explain(contest(64), "s2n64x4m1p4");
  EXPECT_NE(few.find(twin), std::string::npos) << few;
  EXPECT_NE(few.find(whole), std::string::npos) << few;
  const std::string many = explain(contest(8), "s16n64x4m1p4");
  EXPECT_EQ(many.find(twin), std::string::npos) << many;
  EXPECT_NE(many.find(whole), std::string::npos) << many;
  EXPECT_EQ(explain(contest(8), "s4n64x4m1p4g1").find(twin), std::string::npos);  // bulk gather: general merge
  EXPECT_NE(explain(contest(8), "s4n32x4m1p4").find("rows of at most 64 valid slots stay whole"), std::string::npos);
  const std::string one = explain(contest(8), "s1n64x4m1p4");
  EXPECT_EQ(one.find("merge"), std::string::npos) << one;  // one CTA per row: nothing to merge
  DsaProblem wide = contest(32);
  wide.num_heads = 64;
  EXPECT_NE(explain(wide, "s2n64x4m1p4g2w1h64").find(twin), std::string::npos);
}

// v2_fused's rules, each with its reason (no GPU: the H200 of the table).
TEST(V2Fused, ValidationNamesEveryRule) {
  const DsaKernel& v2 = *find_kernel_as<DsaKernel>("dsa_decode.v2_fused.bf16");
  const DeviceFacts h200 = device("H200");
  const auto why = [&](const DsaProblem& p, const char* name) { return mlakit::why(v2, p, name, h200); };
  EXPECT_EQ(why(contest(8), "s16n64x4m1p2"), "ok");
  EXPECT_EQ(why(contest(8), "s16n64x4m1p2g1"), "ok");
  EXPECT_NE(why(contest(8), "s16n64x4m1p2g2").find("g (gather) must be 0"), std::string::npos);
  EXPECT_NE(why(contest(8), "s16n64x4m1p2w1").find("w (MMA path) must be 0"), std::string::npos);
  EXPECT_NE(why(contest(8), "s16n64x4m4p2").find("merges in the kernel: m must be 1"), std::string::npos);
  EXPECT_NE(why(contest(8), "s16n64x4m1p3").find("(stages, producers) = (4, 3) is not instantiated"),
            std::string::npos);
  EXPECT_NE(why(contest(8), "s16n64x4m1p2g3").find("g (gather) must be"), std::string::npos);
  EXPECT_NE(why(contest(8), "s16n48x4m1p2").find("multiple of 32"), std::string::npos);
  EXPECT_NE(why(contest(8), "s32n64x4m1p2").find("all 256 (32 x T=8) must be resident at once"),
            std::string::npos);
  EXPECT_EQ(why(contest(200), "s1n64x4m1p2"), "ok");  // one CTA per row: no waiting, any T
  DsaProblem long_rows = contest(1);
  long_rows.topk = 4096;
  EXPECT_NE(why(long_rows, "s1n64x4m1p2").find("rows of at most 2560 indices"), std::string::npos);
  DsaProblem heads = contest(1);
  heads.num_heads = 8;
  EXPECT_NE(why(heads, "s1n64x4m1p2").find("runs 16, 32, 64 or 128 heads; got num_heads=8"), std::string::npos);
  // 32..128 heads: one CTA per 16, 32 (h32) or 64 (h64, wgmma) heads and split, all of them
  // co-resident when rows split; the default takes 64 heads per CTA from T x H >= 320 (64 heads
  // from T = 5, 128 from T = 3), 16 up to T x H = 256, and 32 at 32 heads from T = 9.
  heads.num_heads = 128;
  EXPECT_EQ(why(heads, "s16n64x4m1p2"), "ok");
  EXPECT_NE(why(heads, "s32n64x4m1p2").find("all 256 (32 x T=1 x 8 head groups) must be resident at once"),
            std::string::npos);
  EXPECT_EQ(why(heads, "s32n64x4m1p2h32"), "ok");
  EXPECT_EQ(v2.default_tiling(heads, h200), "s16n64x4m1p4");
  heads.num_tokens = 3;  // 2 head groups x 3 tokens x 16 splits: 96 CTAs
  EXPECT_EQ(v2.default_tiling(heads, h200), "s16n64x4m1p4g2w1h64");
  heads.num_tokens = 2;  // T x H = 256: h16, eight head groups
  EXPECT_EQ(v2.default_tiling(heads, h200), "s8n64x4m1p4");
  heads.num_tokens = 1;
  EXPECT_EQ(why(heads, "s64n64x4m1p4g2w1h64"), "ok");
  EXPECT_NE(why(heads, "s4n64x4m1p2g1h32").find("h32 (two consumer warpgroups) is compiled with g0"),
            std::string::npos);
  EXPECT_NE(why(heads, "s4n64x4m1p2w1h32").find("w (MMA path) must be 0"), std::string::npos);
  EXPECT_NE(why(heads, "s4n64x5m1h32").find("(stages, producers) = (5, 1) is not instantiated with h32"),
            std::string::npos);
  EXPECT_NE(why(heads, "s4n64x4m1p2h64").find("h64 (64 heads per CTA, wgmma) is compiled with x4p4, g2"),
            std::string::npos);
  EXPECT_NE(why(heads, "s4n64x4m1p4g2h64").find("h64 (64 heads per CTA, wgmma) is compiled with x4p4, g2"),
            std::string::npos);
  EXPECT_NE(why(heads, "s4n64x4m1p4g2w1h128").find("h (heads per CTA) must be 16, 32 or 64; got 128"),
            std::string::npos);
  heads.num_tokens = 16;
  EXPECT_EQ(v2.default_tiling(heads, h200), "s4n64x4m1p4g2w1h64");
  // h64 keeps each CTA's compacted slots in the workspace, after the partials.
  heads.num_heads = 64;
  EXPECT_EQ(v2.default_tiling(heads, h200), "s8n64x4m1p4g2w1h64");
  heads.num_tokens = 8;  // T x H = 512: h64 with 16 CTAs per row
  EXPECT_EQ(v2.default_tiling(heads, h200), "s16n64x4m1p4g2w1h64");
  heads.num_tokens = 5;  // T x H = 320
  EXPECT_EQ(v2.default_tiling(heads, h200), "s16n64x4m1p4g2w1h64");
  heads.num_tokens = 4;  // T x H = 256: h16, four head groups
  EXPECT_EQ(v2.default_tiling(heads, h200), "s8n64x4m1p4");
  heads.num_tokens = 9;
  EXPECT_EQ(v2.default_tiling(heads, h200), "s8n64x4m1p4g2w1h64");
  heads.num_tokens = 32;
  EXPECT_EQ(v2.default_tiling(heads, h200), "s4n64x4m1p4g2w1h64");
  EXPECT_EQ(workspace_of(v2, heads, v2.default_tiling(heads, h200), h200),
            4096 + 32 * 4 * 4 * 16 * 2 * 4 + size_t(32) * 4 * 4 * 16 * 512 * 4 + size_t(32) * 4 * 2048 * 4);
  EXPECT_EQ(workspace_of(v2, heads, "s1n64x4m1p4g2w1h64", h200), 4096 + size_t(32) * 2048 * 4);
  heads.num_tokens = 16;
  heads.num_heads = 32;
  EXPECT_EQ(v2.default_tiling(heads, h200), "s8n64x4m1p2h32");
  heads.num_tokens = 8;  // T x H = 256: h16, two head groups
  EXPECT_EQ(v2.default_tiling(heads, h200), "s8n64x4m1p4");
  heads.num_tokens = 16;
  EXPECT_NE(why(heads, "s1n64x4m1p4g2w1h64").find("h (heads per CTA) must divide num_heads=32"), std::string::npos);
  // The partials of every block of 16 heads.
  EXPECT_EQ(workspace_of(v2, heads, v2.default_tiling(heads, h200), h200),
            4096 + 16 * 2 * 8 * 16 * 2 * 4 + size_t(16) * 2 * 8 * 16 * 512 * 4);
  heads.num_heads = 16;
  EXPECT_NE(why(heads, "s8n64x4m1p2h32").find("h (heads per CTA) must divide num_heads=16"), std::string::npos);
  EXPECT_EQ(v2.default_tiling(heads, h200), "s8n64x4m1p4");
  // The default: about one CTA per SM, the default ring, mma.sync; at T = 1 no more splits than a
  // row of 2048 slots fills at 64 per split (32), and for a short top-k fewer still.
  EXPECT_EQ(v2.default_tiling(contest(1), h200), "s32n64x4m1p4");
  DsaProblem short_topk = contest(1);
  short_topk.topk = 600;  // 10 splits of 64: the first power of two above, 16
  EXPECT_EQ(v2.default_tiling(short_topk, h200), "s16n64x4m1p4");
  short_topk.topk = 64;
  EXPECT_EQ(v2.default_tiling(short_topk, h200), "s1n64x4m1p4");
  EXPECT_EQ(v2.default_tiling(contest(16), h200), "s8n64x4m1p4");
  EXPECT_EQ(v2.default_tiling(contest(128), h200), "s1n64x4m1p4");
  for (const std::string& name : v2.search_space(contest(8))) {
    dsa_v2::Tiling t;
    ASSERT_TRUE(dsa_v2::Tiling::parse(name, &t).is_ok()) << name;
    EXPECT_TRUE(t.merge_head_groups == 1 && t.mma == 0) << name;
  }
  // Pooled rows (b1): a tuner's choice for h16 and h32 at T <= 8, no default since h64 takes 64
  // and 128 heads from T x H >= 320 (devlog step 42); every CTA copies the T index rows into its
  // ring, which must hold them.
  EXPECT_EQ(v2.default_tiling(contest(2), h200), "s32n64x4m1p4");
  EXPECT_EQ(v2.default_tiling(contest(8), h200), "s16n64x4m1p4");
  EXPECT_EQ(why(contest(8), "s16n64x4m1p2b1"), "ok");
  EXPECT_EQ(why(contest(8), "s1n64x4m1p2b1"), "ok");
  EXPECT_NE(why(contest(8), "s16n64x3m1b1").find("b1 (pooled rows) is compiled with x4p2, g0 and w0, for h16 and h32"),
            std::string::npos);
  EXPECT_NE(why(contest(9), "s8n64x4m1p2b1").find("at most 8 tokens; got T=9"), std::string::npos);
  EXPECT_NE(why(contest(8), "s8n64x4m1p2b2").find("b (pooled rows) must be 0 or 1; got 2"), std::string::npos);
  DsaProblem wide = contest(8);
  wide.num_heads = 128;
  EXPECT_EQ(v2.default_tiling(wide, h200), "s8n64x4m1p4g2w1h64");
  wide.num_tokens = 4;  // T x H = 512: h64, 16 CTAs per token and head group
  EXPECT_EQ(v2.default_tiling(wide, h200), "s16n64x4m1p4g2w1h64");
  wide.num_tokens = 5;
  EXPECT_EQ(v2.default_tiling(wide, h200), "s8n64x4m1p4g2w1h64");
  DeviceFacts sm66 = h200;
  sm66.num_sms = 66;
  DsaProblem pooled = contest(8);
  pooled.num_heads = 64;  // 1 head group x 8 tokens x 8 splits fill 64 of 66 SMs
  EXPECT_EQ(v2.default_tiling(pooled, sm66), "s8n64x4m1p4g2w1h64");
  EXPECT_EQ(why(pooled, "s4n64x4m1p2h32b1"), "ok");  // the tuner may still pool h32
  pooled.topk = 256;  // 4 splits of 64 fill a row
  EXPECT_EQ(v2.default_tiling(pooled, sm66), "s4n64x4m1p4g2w1h64");
  DsaProblem short_rows = contest(3);
  short_rows.topk = 256;
  EXPECT_EQ(v2.default_tiling(short_rows, h200), "s4n64x4m1p4");
  wide.num_tokens = 8;
  wide.num_heads = 64;
  EXPECT_EQ(v2.default_tiling(wide, h200), "s16n64x4m1p4g2w1h64");
  wide.num_heads = 128;
  EXPECT_NE(why(wide, "s2n64x4m1p4g2w1h64b1").find("b1 (pooled rows) is compiled with x4p2, g0 and w0, for h16 and h32"),
            std::string::npos);
  DsaProblem long_topk = contest(8);
  long_topk.topk = 2560;
  EXPECT_EQ(why(long_topk, "s16n64x4m1p2b1"), "ok");  // 80 KB of rows in a 146 KB ring
  // A pooled row may take other tokens' CTAs: partials even with one CTA per token.
  EXPECT_EQ(workspace_of(v2, contest(8), "s1n64x4m1p2b1", h200), 4096 + 8 * 16 * 2 * 4 + size_t(8) * 16 * 512 * 4);
  for (const char* other : {"dsa_decode.v1_splitk.bf16", "dsa_decode.floor_gather.bf16"})
    EXPECT_FALSE(find_kernel_as<DsaKernel>(other)->check(contest(8), "s16n64x2m4b1", h200).is_ok()) << other;
  // Split rows keep their partials in the workspace; one CTA per row needs none.
  EXPECT_EQ(workspace_of(v2, contest(128), v2.default_tiling(contest(128), h200), h200), 0u);
  EXPECT_GT(workspace_of(v2, contest(8), v2.default_tiling(contest(8), h200), h200), size_t(8) * 16 * 16 * 512 * 4);
}

// One workspace serves every plan of the op in turn: the counters of the single-launch kernel sit
// in the op's fixed region, and no kernel's partials ever overlap it, whatever T and the splits.
TEST(DsaWorkspace, NoKernelPutsPartialsOnTheCounters) {
  const DsaKernel& v2 = *find_kernel_as<DsaKernel>("dsa_decode.v2_fused.bf16");
  const DeviceFacts h200 = device("H200");
  for (int t = 1; t <= 256; ++t)
    for (const DsaKernel* k : {&v1(), &v2}) {
      const DsaProblem p = contest(t);
      const size_t bytes = workspace_of(*k, p, k->default_tiling(p, h200), h200);
      if (bytes > 0) EXPECT_GT(bytes, 4096u) << k->info().key << " T=" << t;  // the region, then partials
    }
  DsaProblem big = contest(600);
  const std::string t = "s2n64x4m1p2";
  DeviceFacts huge = h200;
  huge.num_sms = 4096;  // co-residency would allow it: the counter region does not
  const Status s = v2.check(big, t, huge);
  EXPECT_NE(s.message().find("counter region, which holds 512 blocks of 16 heads; got T=600 x 1"),
            std::string::npos) << s.message();
  DsaProblem wide = contest(100);  // 100 tokens x 8 head groups: 800 counted blocks
  wide.num_heads = 128;
  EXPECT_NE(v2.check(wide, t, huge).message().find("got T=100 x 8"), std::string::npos);
  wide.num_tokens = 64;
  EXPECT_TRUE(v2.check(wide, t, huge).is_ok());
}

TEST(V1SplitK, RejectsTheSingleLaunchFields) {
  const Status s = v1().check(contest(8), "s16n64x2m4p2", device("H200"));
  EXPECT_NE(s.message().find("unexpected 'p2'"), std::string::npos) << s.message();
}

// A plan for the H200 of the table (no GPU needed): what tests of dsa_run start from.
DsaPlan dry_plan(const DsaProblem& p, const std::string& tiling = "", const std::string& kernel_key = "") {
  static const DeviceFacts h200 = device("H200");
  DsaPlanOptions o;
  o.device_facts = &h200;
  o.tiling = tiling;
  o.kernel_key = kernel_key;
  DsaPlan plan;
  const Status s = dsa_plan(p, o, &plan);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return plan;
}

TEST(Run, BadTensorsAreReportedBeforeAnyLaunch) {
  const DsaPlan plan = dry_plan(contest(1), "s32n64x2m4", "dsa_decode.v1_splitk.bf16");
  const size_t need = plan.workspace_bytes();
  ASSERT_EQ(need, 4096 + size_t(1) * 32 * 16 * 514 * 4);
  DsaTensors x;
  Status s = dsa_run(plan, x, nullptr, 0, nullptr);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("q_nope: null pointer"), std::string::npos) << s.message();
  alignas(16) static char buf[4096];
  x.q_nope = buf + 2;  // misaligned
  s = dsa_run(plan, x, nullptr, 0, nullptr);
  EXPECT_NE(s.message().find("q_nope: must be 16-byte aligned"), std::string::npos) << s.message();
  x.q_nope = x.q_pe = x.ckv_cache = x.kpe_cache = x.output = buf;
  x.sparse_indices = reinterpret_cast<const int32_t*>(buf);
  x.lse = reinterpret_cast<float*>(buf);
  x.sm_scale = 0.1f;
  s = dsa_run(plan, x, nullptr, 0, nullptr);
  EXPECT_NE(s.message().find("workspace: the plan needs " + std::to_string(need) + " bytes, got 0"),
            std::string::npos)
      << s.message();
  const std::unique_ptr<void, decltype(&std::free)> ws(std::aligned_alloc(16, need), &std::free);
  x.ckv_stride_slot = 516;  // not a multiple of 8 elements
  s = dsa_run(plan, x, ws.get(), need, nullptr);
  EXPECT_NE(s.message().find("ckv_stride_slot: must be a multiple of 8"), std::string::npos) << s.message();
  x.ckv_stride_slot = 0;
  x.attn_sink = reinterpret_cast<const float*>(buf + 2);
  s = dsa_run(plan, x, ws.get(), need, nullptr);
  EXPECT_NE(s.message().find("attn_sink: must be 4-byte aligned"), std::string::npos) << s.message();
  x.attn_sink = reinterpret_cast<const float*>(buf + 4);  // a float's alignment is enough
  x.counters = reinterpret_cast<uint32_t*>(buf + 4);
  s = dsa_run(plan, x, ws.get(), need, nullptr);
  EXPECT_NE(s.message().find("counters: must be 16-byte aligned"), std::string::npos) << s.message();
  x.attn_sink = nullptr;
  x.counters = nullptr;
  // Every tensor fine: the device check is last, and a plan made without a GPU never runs.
  s = dsa_run(plan, x, ws.get(), need, nullptr);
  EXPECT_EQ(s.code(), Code::kUnsupported);
  EXPECT_NE(s.message().find("plan: made for NVIDIA H200 without a live device"), std::string::npos)
      << s.message();
  DsaPlanOptions unknown;
  unknown.kernel_key = "nope";
  DsaPlan none;
  EXPECT_EQ(dsa_plan(contest(1), unknown, &none).code(), Code::kNotFound);
}

// Issue 8: `mlakit run --t 1 --topk 4096 --tiling s1n64x2m4` once timed a launch whose split is
// twice the kernel's 2048-slot compaction. The plan is where the tiling is checked, and nothing
// but a plan launches.
TEST(Plan, ASplitLongerThanTheCompactionCannotBePlanned) {
  DsaProblem p = contest(1);
  p.topk = 4096;
  const DeviceFacts h200 = device("H200");
  DsaPlanOptions o;
  o.device_facts = &h200;
  o.tiling = "s1n64x2m4";
  o.kernel_key = "dsa_decode.v1_splitk.bf16";
  DsaPlan plan;
  const Status s = dsa_plan(p, o, &plan);
  EXPECT_EQ(s.code(), Code::kUnsupported);
  EXPECT_NE(s.message().find("a split of 4096 slots exceeds the 2048 one CTA compacts; use num_splits >= 2"),
            std::string::npos)
      << s.message();
  EXPECT_TRUE(plan.empty());
}

TEST(Plan, OnlyThePlannerMakesAPlan) {
  // No aggregate initialization, no public fields: the accessors are all there is.
  static_assert(!std::is_aggregate_v<DsaPlan>);
  static_assert(!std::is_constructible_v<DsaPlan, DsaProblem, std::string, std::string, size_t>);
  const DsaPlan empty;
  EXPECT_TRUE(empty.empty());
  DsaTensors x;
  const Status s = dsa_run(empty, x, nullptr, 0, nullptr);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("plan: empty; make it with dsa_plan"), std::string::npos) << s.message();
}

TEST(Plan, RecordsKernelTilingWorkspaceAndDevice) {
  const DsaPlan plan = dry_plan(contest(8));
  const DsaKernel& v2 = *find_kernel_as<DsaKernel>("dsa_decode.v2_fused.bf16");
  EXPECT_EQ(plan.kernel_key(), "dsa_decode.v2_fused.bf16");  // the default since it leads v1 everywhere
  EXPECT_EQ(plan.problem(), contest(8));
  EXPECT_EQ(plan.device(), -1);  // planned for facts, not a live device
  EXPECT_EQ(plan.device_name(), "NVIDIA H200");
  EXPECT_EQ(plan.tiling(), v2.default_tiling(contest(8), device("H200")));
  EXPECT_EQ(plan.tiling(), "s16n64x4m1p4");
  EXPECT_EQ(plan.workspace_bytes(), workspace_of(v2, contest(8), plan.tiling(), device("H200")));
  const DsaPlan v1_plan = dry_plan(contest(8), "", "dsa_decode.v1_splitk.bf16");
  EXPECT_EQ(v1_plan.tiling(), v1().default_tiling(contest(8), device("H200")));
  EXPECT_EQ(v1_plan.workspace_bytes(), workspace_of(v1(), contest(8), v1_plan.tiling(), device("H200")));
}

TEST(Plan, ProblemFirstThenKernelThenArch) {
  DsaPlan plan;
  DsaProblem bad = contest(1);
  bad.num_tokens = 0;
  Status s = dsa_plan(bad, {}, &plan);  // no GPU needed to say what is wrong with the problem
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("num_tokens"), std::string::npos) << s.message();
  DsaProblem heads = contest(1);
  heads.num_heads = 8;  // a valid problem (TP 16) that no kernel runs: the error names what they run
  const DeviceFacts h200 = device("H200");
  DsaPlanOptions o;
  o.device_facts = &h200;
  s = dsa_plan(heads, o, &plan);
  EXPECT_EQ(s.code(), Code::kUnsupported);
  EXPECT_NE(s.message().find("no dsa_decode kernel is registered for bf16 with 8 heads"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("dsa_decode.v2_fused.bf16 (bf16, 16, 32, 64, 128 heads)"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("dsa_decode.v1_splitk.bf16 (bf16, 16 heads)"), std::string::npos) << s.message();
  heads.num_heads = 64;
  ASSERT_TRUE(dsa_plan(heads, o, &plan).is_ok());
  EXPECT_EQ(plan.kernel_key(), "dsa_decode.v2_fused.bf16");
  const DeviceFacts rtx = device("RTX 5090");
  o.device_facts = &rtx;
  s = dsa_plan(contest(1), o, &plan);
  EXPECT_EQ(s.code(), Code::kUnsupported);
  EXPECT_NE(s.message().find("needs sm_90a; found sm_120"), std::string::npos) << s.message();
}

TEST(Registry, TheDefaultIsTheHighestRankThatRunsTheShape) {
  EXPECT_EQ(default_kernel("dsa_decode", "bf16", 16), find_kernel("dsa_decode.v2_fused.bf16"));
  for (int heads : {32, 64, 128}) {
    EXPECT_EQ(default_kernel("dsa_decode", "bf16", heads), find_kernel("dsa_decode.v2_fused.bf16")) << heads;
    EXPECT_EQ(default_kernel("dsa_decode", "fp8", heads), find_kernel("dsa_decode.v2_fp8.fp8")) << heads;
  }
  EXPECT_EQ(default_kernel("dsa_decode", "bf16", 8), nullptr);
  EXPECT_EQ(default_kernel("dsa_decode", "fp8", 16), find_kernel("dsa_decode.v2_fp8.fp8"));
  EXPECT_EQ(default_kernel("dsa_decode", "fp8", 8), nullptr);
  for (int heads : {16, 32, 64, 128})
    EXPECT_EQ(default_kernel("mla_decode", "bf16", heads), find_kernel("mla_decode.v1_paged.bf16")) << heads;
  EXPECT_EQ(default_kernel("mla_decode", "bf16", 8), nullptr);
  EXPECT_EQ(default_kernel("mla_decode", "fp8", 16), nullptr);
  EXPECT_EQ(kernels_of("dsa_decode").size(), 5u);
  for (const char* key : {"dsa_decode.v1_splitk.bf16", "dsa_decode.v2_fused.bf16", "dsa_decode.floor_gather.bf16",
                          "dsa_decode.v2_fp8.fp8", "dsa_decode.floor_fp8.fp8"})
    EXPECT_NE(kernel_keys("dsa_decode").find(key), std::string::npos) << key;
}

TEST(Registry, AFloorIsNeverTheDefaultButIsFoundAsTheFloor) {
  const KernelEntry* floor = floor_kernel("dsa_decode", "bf16", 16);
  ASSERT_NE(floor, nullptr);
  EXPECT_EQ(floor->info().key, "dsa_decode.floor_gather.bf16");
  EXPECT_TRUE(floor->info().floor);
  EXPECT_EQ(floor_kernel("dsa_decode", "bf16", 64), floor);  // the rows are the same for any head count
  EXPECT_EQ(floor_kernel("dsa_decode", "bf16", 8), nullptr);
  // Even the highest rank cannot make a floor the default.
  KernelInfo info = floor->info();
  info.rank = 100;
  struct Fake : KernelEntry {
    KernelInfo i;
    const KernelInfo& info() const override { return i; }
  } fake;
  fake.i = info;
  EXPECT_EQ(select_kernel({&fake}, "dsa_decode", "bf16", 16), nullptr);
}

}  // namespace
}  // namespace mlakit
