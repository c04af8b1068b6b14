// The rules that cut the single-launch DSA kernels' rows over CTAs (row_ring.h), checked on the
// host where every case can be enumerated: split_row for one row, and pooled rows (a tiling's b1),
// where every CTA of the grid derives the same plan from the T valid counts and must find a
// distinct piece of work: every split of every row exactly once, a row's own CTAs first, compact
// partial indices that fit the workspace.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <utility>

#include "kernels/dsa_decode/common/row_ring.h"

namespace mlakit::dsa_ring {
namespace {

// Every (token, cta) of a T x S grid under the plan of `n`; fails the test on any rule broken.
void check_pool(const int (&n)[kMaxPoolTokens], int tokens, int ctas, int min_rows) {
  SCOPED_TRACE(::testing::Message() << "T=" << tokens << " S=" << ctas << " min_rows=" << min_rows);
  const PoolPlan plan = pool_plan(n, tokens, ctas, min_rows);
  EXPECT_EQ(plan.per % kStageRows, 0);
  EXPECT_GE(plan.per, min_rows);
  int total = 0, longest = 0;
  for (int r = 0; r < tokens; ++r) {
    EXPECT_EQ(plan.splits[r], n[r] == 0 ? 1 : (n[r] + plan.per - 1) / plan.per) << "row " << r;
    total += plan.splits[r];
    longest = std::max(longest, n[r]);
  }
  EXPECT_LE(total, tokens * ctas);
  // The least such per: one stage fewer would need more CTAs than the grid has (or break min_rows).
  if (plan.per - kStageRows >= min_rows && plan.per - kStageRows > 0) {
    int more = 0;
    for (int r = 0; r < tokens; ++r) more += n[r] == 0 ? 1 : (n[r] + plan.per - kStageRows - 1) / (plan.per - kStageRows);
    EXPECT_GT(more, tokens * ctas);
  }
  std::map<std::pair<int, int>, int> seen;  // (row, split) -> times
  int working = 0;
  for (int t = 0; t < tokens; ++t)
    for (int c = 0; c < ctas; ++c) {
      const PoolWork w = pool_work(plan, tokens, ctas, t, c);
      if (w.row < 0) continue;
      ++working;
      ASSERT_LT(w.row, tokens);
      ASSERT_GE(w.split, 0);
      ASSERT_LT(w.split, plan.splits[w.row]) << "token " << t << " cta " << c;
      ++seen[{w.row, w.split}];
      // A row keeps its own CTAs for its first splits; other tokens' CTAs only take splits past S.
      if (w.row == t) EXPECT_EQ(w.split, c);
      else EXPECT_GE(w.split, ctas);
      int before = 0;
      for (int r = 0; r < w.row; ++r) before += plan.splits[r];
      EXPECT_EQ(w.first_split, before);
      EXPECT_LE(w.first_split + w.split, tokens * ctas - 1);  // the workspace holds T x S partials
      // A split holds slots [split x per, ...) of a row that has them (an empty row: its CTA 0).
      if (n[w.row] > 0) EXPECT_LT(w.split * plan.per, n[w.row]);
    }
  EXPECT_EQ(working, total);
  for (int r = 0; r < tokens; ++r)
    for (int j = 0; j < plan.splits[r]; ++j) EXPECT_EQ((seen[{r, j}]), 1) << "row " << r << " split " << j;
  (void)longest;
}

TEST(RowSplit, OneRowCoversItsSlots) {
  for (int max_splits : {1, 2, 8, 32, 64})
    for (int n = 0; n <= 2560; n += 7) {
      const RowSplit rs = split_row(n, max_splits, 64);
      EXPECT_GE(rs.splits, 1);
      EXPECT_LE(rs.splits, std::max(1, max_splits));
      EXPECT_EQ(rs.rows_per_split % kStageRows, 0);
      EXPECT_GE(rs.rows_per_split, 64);
      if (n > 0) {
        EXPECT_GE(rs.splits * rs.rows_per_split, n);
        EXPECT_LT((rs.splits - 1) * rs.rows_per_split, n);
      }
    }
}

// A merging kernel keeps rows of at most merging_whole_rows(min_rows) whole (one split holding all
// of them) and splits longer ones as before; whole_rows 0 (a floor) changes nothing.
TEST(RowSplit, ShortRowsStayWholeWhereTheKernelMerges) {
  for (int min_rows : {32, 64, 128})
    for (int max_splits : {1, 2, 16, 32})
      for (int n = 0; n <= 2048; ++n) {
        const int whole = merging_whole_rows(min_rows);
        EXPECT_EQ(whole, min_rows + kStageRows);
        const RowSplit plain = split_row(n, max_splits, min_rows), rs = split_row(n, max_splits, min_rows, whole);
        const RowSplit floor_rs = split_row(n, max_splits, min_rows, 0);
        EXPECT_EQ(floor_rs.splits, plain.splits);
        EXPECT_EQ(floor_rs.rows_per_split, plain.rows_per_split);
        if (n <= whole) {
          EXPECT_EQ(rs.splits, 1) << n;
          EXPECT_EQ(rs.rows_per_split, n) << n;
        } else {
          EXPECT_EQ(rs.splits, plain.splits) << n;
          EXPECT_EQ(rs.rows_per_split, plain.rows_per_split) << n;
        }
      }
  // contest-06's row of 92 at the default n64: two splits before, one now.
  EXPECT_EQ(split_row(92, 32, 64).splits, 2);
  EXPECT_EQ(split_row(92, 32, 64, merging_whole_rows(64)).splits, 1);
  EXPECT_EQ(split_row(97, 32, 64, merging_whole_rows(64)).splits, 2);
}

// The kernels' float ceil_div (row_ring.h): any quotient within a relative 2^-21 of the exact one
// (__fdividef's bound, taken at both ends) floors to ceil(a / b) over the whole domain, and
// split_row_by with it gives split_row's plan.
TEST(RowSplit, FloatCeilDivIsExactOnTheKernelsDomain) {
  constexpr double kErr = 1.0 / (1 << 21);
  const auto floors = [&](int a, int b, double rel) {
    const float num = ceil_div_numerator(a, b);
    EXPECT_EQ(double(num), a + b - 0.5);  // the numerator is exact in float
    return int(std::floor(double(num) / b * (1 + rel)));
  };
  int bad = 0;
  for (int b = 1; b <= kMaxRowEntries; ++b)
    for (int a = 0; a + b <= 2 * kMaxRowEntries; a += (b > 256 ? 3 : 1)) {
      const int want = (a + b - 1) / b;
      bad += floors(a, b, -kErr) != want || floors(a, b, kErr) != want;
    }
  EXPECT_EQ(bad, 0);
  for (double rel : {-kErr, kErr})
    for (int max_splits = 1; max_splits <= 64; ++max_splits)
      for (int min_rows : {1, 31, 32, 64, 100, 256, 4096, 20000})
        for (int n = 0; n <= kMaxRowEntries; ++n) {
          const RowSplit want = split_row(n, max_splits, min_rows);
          const RowSplit got =
              split_row_by(n, max_splits, min_rows, [&](int a, int b) { return floors(a, b, rel); });
          if (got.splits != want.splits || got.rows_per_split != want.rows_per_split) {
            ADD_FAILURE() << "n=" << n << " max_splits=" << max_splits << " min_rows=" << min_rows;
            return;
          }
        }
}

TEST(RowSplit, PoolOfOneRowIsTheRowsOwnSplit) {
  int n[kMaxPoolTokens] = {};
  for (int s : {1, 4, 16, 32})
    for (int v = 0; v <= 2048; v += 61) {
      n[0] = v;
      const PoolPlan plan = pool_plan(n, 1, s, 64);
      const RowSplit rs = split_row(v, s, 64);
      EXPECT_EQ(plan.splits[0], rs.splits) << v << " " << s;
      if (v > 0) EXPECT_EQ(plan.per, rs.rows_per_split) << v << " " << s;
    }
}

TEST(RowSplit, PooledRowsGiveEverySplitOneCta) {
  // The contest's shape of batch (one long row among short ones), all long, all empty, and random.
  const int contest12[kMaxPoolTokens] = {63, 9, 2048, 212, 11, 25, 6, 50};
  for (int s : {1, 2, 4, 8, 16}) check_pool(contest12, 8, s, 64);
  const int full[kMaxPoolTokens] = {2048, 2048, 2048, 2048, 2048, 2048, 2048, 2048};
  for (int t = 2; t <= 8; ++t) check_pool(full, t, 16, 64);
  const int empty[kMaxPoolTokens] = {};
  check_pool(empty, 8, 4, 64);
  const int mixed[kMaxPoolTokens] = {0, 2048, 0, 1, 2560, 64, 65, 0};
  for (int s : {1, 3, 16}) check_pool(mixed, 8, s, 32);
  std::mt19937 rng(7);
  for (int trial = 0; trial < 3000; ++trial) {
    const int tokens = 2 + int(rng() % 7), ctas = 1 << (rng() % 6), min_rows = rng() % 2 ? 64 : 32;
    int n[kMaxPoolTokens] = {};
    for (int r = 0; r < tokens; ++r) {
      const unsigned kind = rng() % 4;
      n[r] = kind == 0 ? 0 : kind == 1 ? int(rng() % 64) : kind == 2 ? 2048 : int(rng() % 2561);
    }
    check_pool(n, tokens, ctas, min_rows);
    if (HasFailure()) return;
  }
}

}  // namespace
}  // namespace mlakit::dsa_ring
