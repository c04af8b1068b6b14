// DsaProblem::validate and to_string: contract-level ranges, messages that name the field, the
// expected and the actual value; == and the hash plan caches key on.
#include <gtest/gtest.h>

#include <unordered_map>

#include "mlakit/dsa.h"

namespace mlakit {
namespace {

DsaProblem contest_problem() {
  DsaProblem p;
  p.num_tokens = 8;
  p.num_pages = 8462;
  p.page_size = 64;
  return p;
}

void expect_invalid(const DsaProblem& p, const std::string& field, const std::string& got) {
  const Status s = p.validate();
  ASSERT_FALSE(s.is_ok()) << p.to_string();
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find(field), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("expected"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("got " + got), std::string::npos) << s.message();
}

TEST(DsaProblem, ContestShapesAreValid) {
  DsaProblem p = contest_problem();
  EXPECT_TRUE(p.validate().is_ok()) << p.validate().to_string();
  p.page_size = 1;  // the ps1 variant
  p.num_pages = 541568;
  EXPECT_TRUE(p.validate().is_ok());
  for (int h : {8, 16, 32, 64, 128}) {
    p.num_heads = h;
    EXPECT_TRUE(p.validate().is_ok()) << h;
  }
}

TEST(DsaProblem, RejectsEachFieldWithItsName) {
  DsaProblem p = contest_problem();
  p.num_tokens = 0;
  expect_invalid(p, "num_tokens", "0");

  p = contest_problem();
  p.num_heads = 12;
  expect_invalid(p, "num_heads", "12");
  p.num_heads = 0;
  expect_invalid(p, "num_heads", "0");

  p = contest_problem();
  p.head_dim_ckv = 576;
  expect_invalid(p, "head_dim_ckv", "576");

  p = contest_problem();
  p.head_dim_kpe = 32;
  expect_invalid(p, "head_dim_kpe", "32");

  p = contest_problem();
  p.page_size = 0;
  expect_invalid(p, "page_size", "0");

  p = contest_problem();
  p.num_pages = -3;
  expect_invalid(p, "num_pages", "-3");

  p = contest_problem();
  p.topk = 0;
  expect_invalid(p, "topk", "0");
}

TEST(DsaProblem, SlotsMustFitInt32) {
  DsaProblem p = contest_problem();
  p.page_size = 64;
  p.num_pages = 1 << 25;  // 2^31 slots: slot 2^31 - 1 is fine, but the count itself is not
  const Status s = p.validate();
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("2147483648"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("int32"), std::string::npos) << s.message();
  p.num_pages = (1 << 25) - 1;
  EXPECT_TRUE(p.validate().is_ok());
}

TEST(DsaProblem, ToString) {
  EXPECT_EQ(contest_problem().to_string(), "T=8 H=16 ckv=512 kpe=64 pages=8462 ps=64 topk=2048");
  DsaProblem p;
  p.num_tokens = 1;
  p.num_pages = 3;
  p.page_size = 1;
  p.topk = 256;
  EXPECT_EQ(p.to_string(), "T=1 H=16 ckv=512 kpe=64 pages=3 ps=1 topk=256");
  p.kv = DsaKv::kFp8;  // the FP8 cache is named last; the bf16 one is left unsaid
  EXPECT_EQ(p.to_string(), "T=1 H=16 ckv=512 kpe=64 pages=3 ps=1 topk=256 kv=fp8");
}

TEST(DsaProblem, EqualityAndHashCoverEveryField) {
  const DsaProblem base = contest_problem();
  const std::hash<DsaProblem> hash;
  EXPECT_EQ(base, contest_problem());
  EXPECT_EQ(hash(base), hash(contest_problem()));
  // Each field on its own makes another problem (and, for these values, another hash).
  int DsaProblem::*fields[] = {&DsaProblem::num_tokens, &DsaProblem::num_heads, &DsaProblem::head_dim_ckv,
                               &DsaProblem::head_dim_kpe, &DsaProblem::num_pages, &DsaProblem::page_size,
                               &DsaProblem::topk};
  constexpr int kIntFields = int(sizeof(fields) / sizeof(fields[0]));
  static_assert(kIntFields * sizeof(int) + sizeof(DsaKv) == sizeof(DsaProblem),
                "a field was added to DsaProblem: list it here");
  std::unordered_map<DsaProblem, int> seen{{base, -1}};
  for (int i = 0; i <= kIntFields; ++i) {
    DsaProblem p = base;
    if (i < kIntFields) p.*fields[i] += 1;
    else p.kv = DsaKv::kFp8;  // the cache format, the one field that is no int
    EXPECT_FALSE(p == base) << i;
    EXPECT_NE(hash(p), hash(base)) << i;
    EXPECT_TRUE(seen.emplace(p, i).second) << i;
  }
  EXPECT_EQ(seen.at(contest_problem()), -1);
}

}  // namespace
}  // namespace mlakit
