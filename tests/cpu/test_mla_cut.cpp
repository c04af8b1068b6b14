// The aligned-pieces cut of mla_decode v1_paged's schedule (schedule.cuh), modelled on the host with
// the kernel's own arithmetic (traits.h: aligned_pieces_of, aligned_piece_start, aligned_widest):
// where the cut is taken, CTA c < sum k_b holds exactly one piece of one item, the pieces of an item
// are on consecutive CTAs in order, no piece is empty, and the pieces cover every unit of the group
// once. The arithmetic itself is checked against exact integer division.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/mla_decode/v1_paged/traits.h"

namespace mlakit::mla_v1 {
namespace {

struct AlignedCut {
  bool taken = false;
  int64_t holding = 0;                // CTAs holding a piece (sum k_b)
  std::vector<int> item;              // per CTA < holding: its item
  std::vector<int64_t> lo, hi;        // its units [lo, hi) of the group's sequence
  std::vector<uint32_t> pieces;       // per item: k_b
};

// The cut as locate_range takes it: units per item `len`, CTAs per group `ctas`, tiling field w.
AlignedCut model(const std::vector<uint32_t>& len, int ctas, int64_t w) {
  AlignedCut cut;
  int64_t total = 0;
  for (uint32_t l : len) total += l;
  const int n = int(std::min<int64_t>(ctas, total));
  const int64_t widest_units = (total + n - 1) / n;
  const int batch = int(len.size());
  if (batch < 2 || batch > n) return cut;
  int64_t widest = 0;
  for (uint32_t l : len) {
    const uint32_t k = aligned_pieces_of(l, n, total);
    cut.pieces.push_back(k);
    cut.holding += k;
    widest = std::max<int64_t>(widest, aligned_widest(l, k));
  }
  cut.taken = cut.holding <= n && widest <= widest_units + w;
  if (!cut.taken) return cut;
  int64_t u = 0;
  for (int b = 0; b < batch; ++b) {
    for (uint32_t j = 0; j < cut.pieces[size_t(b)]; ++j) {
      cut.item.push_back(b);
      cut.lo.push_back(u + aligned_piece_start(len[size_t(b)], cut.pieces[size_t(b)], j));
      cut.hi.push_back(u + aligned_piece_start(len[size_t(b)], cut.pieces[size_t(b)], j + 1));
    }
    u += len[size_t(b)];
  }
  return cut;
}

void check(const std::vector<uint32_t>& len, int ctas, const AlignedCut& cut) {
  ASSERT_TRUE(cut.taken);
  int64_t total = 0;
  for (uint32_t l : len) total += l;
  ASSERT_LE(cut.holding, std::min<int64_t>(ctas, total));
  ASSERT_EQ(int64_t(cut.item.size()), cut.holding);
  int64_t expect = 0, item_start = 0;
  int prev = -1;
  for (size_t c = 0; c < cut.item.size(); ++c) {
    const int b = cut.item[c];
    if (b != prev) {  // the item's first piece: items in order, none skipped
      ASSERT_EQ(b, prev + 1) << "CTA " << c;
      if (prev >= 0) item_start += len[size_t(prev)];
      prev = b;
    }
    EXPECT_EQ(cut.lo[c], expect) << "CTA " << c << ": the pieces must be contiguous";
    EXPECT_LT(cut.lo[c], cut.hi[c]) << "CTA " << c << ": an empty piece would hang its item's merge";
    EXPECT_GE(cut.lo[c], item_start) << "CTA " << c;
    EXPECT_LE(cut.hi[c], item_start + len[size_t(b)]) << "CTA " << c << ": a piece inside one item";
    expect = cut.hi[c];
  }
  EXPECT_EQ(prev, int(len.size()) - 1);
  EXPECT_EQ(expect, total) << "every unit once";
}

TEST(MlaAlignedCut, EqualRequestsTakeTheSamePieces) {
  // 32 requests of 4k rows (64 tiles + 1 unit each) over 132 CTAs: 4 pieces each on 128 CTAs.
  const std::vector<uint32_t> len(32, 65);
  const AlignedCut cut = model(len, 132, 8);
  check(len, 132, cut);
  EXPECT_EQ(cut.holding, 128);
  for (uint32_t k : cut.pieces) EXPECT_EQ(k, 4u);
  // 8 requests over 66 CTAs per group (128 heads): 8 pieces each.
  const std::vector<uint32_t> eight(8, 65);
  const AlignedCut c8 = model(eight, 66, 8);
  check(eight, 66, c8);
  EXPECT_EQ(c8.holding, 64);
}

TEST(MlaAlignedCut, MixedLengthsGetPiecesInProportion) {
  // The mixed s_q 4 batch of mla-serving: 46k, 4.6k, 1.7k, 1.7k rows.
  const std::vector<uint32_t> len = {720, 73, 28, 28};
  const AlignedCut cut = model(len, 132, 8);
  check(len, 132, cut);
  EXPECT_GT(cut.pieces[0], 10 * cut.pieces[2]);
  // A batch of very uneven lengths fails the rule (a short item's one piece is too wide).
  const std::vector<uint32_t> uneven = {1000, 2, 2, 300};
  EXPECT_FALSE(model(uneven, 132, 0).taken);
}

TEST(MlaAlignedCut, NotForOneRequestNorMoreRequestsThanCtas) {
  EXPECT_FALSE(model({1000}, 132, 8).taken);
  EXPECT_FALSE(model(std::vector<uint32_t>(200, 17), 132, 1 << 20).taken);
}

TEST(MlaAlignedCut, RandomBatchesKeepTheInvariants) {
  std::mt19937_64 rng(1234);
  int taken = 0;
  for (int it = 0; it < 20000; ++it) {
    const int ctas = std::vector<int>{132, 66, 33, 128, 16, 5}[rng() % 6];
    const int batch = 2 + int(rng() % 140);
    std::vector<uint32_t> len(static_cast<size_t>(batch), 0u);
    const int mode = int(rng() % 3);
    const uint32_t base = 1 + uint32_t(rng() % 3000);
    for (auto& l : len)
      l = mode == 0 ? base : mode == 1 ? std::max<uint32_t>(1, base + uint32_t(rng() % 7) - 3) : 1 + uint32_t(rng() % 3000);
    const AlignedCut cut = model(len, ctas, int64_t(rng() % 3 == 0 ? 1 << 20 : 8));
    if (!cut.taken) continue;
    ++taken;
    SCOPED_TRACE(::testing::Message() << "iteration " << it << ", " << batch << " items over " << ctas << " CTAs");
    check(len, ctas, cut);
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GT(taken, 2000);  // the invariants were exercised
}

TEST(MlaAlignedCut, ArithmeticMatchesIntegerDivision) {
  std::mt19937_64 rng(99);
  for (int it = 0; it < 200000; ++it) {
    const uint32_t len = 1 + uint32_t(rng() % (1u << 25));  // rows up to 2^31 in 64-row units
    const int n = 1 + int(rng() % kMaxCtas);
    // totals around len * n / k for small k, where the quotient is near an integer, and random ones
    const uint64_t k_near = 1 + rng() % uint64_t(n);
    uint64_t total = it % 2 ? uint64_t(len) * uint64_t(n) / k_near + rng() % 3 : uint64_t(len) + rng() % (1ull << 33);
    if (total < uint64_t(n)) total = uint64_t(n);
    if (total < len) total = len;
    const uint64_t exact = uint64_t(len) * uint64_t(n) / total;
    const uint32_t k = aligned_pieces_of(len, n, int64_t(total));
    ASSERT_EQ(k, std::max<uint64_t>(1, exact)) << len << " " << n << " " << total;
    const uint32_t kk = 1 + uint32_t(rng() % uint64_t(std::min<uint32_t>(len, uint32_t(n))));
    const uint32_t j = uint32_t(rng() % (uint64_t(kk) + 1));
    ASSERT_EQ(aligned_piece_start(len, kk, j), int64_t(uint64_t(j) * len / kk)) << len << " " << kk << " " << j;
    ASSERT_EQ(aligned_widest(len, kk), (len + kk - 1) / kk);
  }
  // Integer quotients stay integers: 4 requests of 33 units over 132 CTAs are 33 pieces each.
  EXPECT_EQ(aligned_pieces_of(33, 132, 4 * 33), 33u);
  EXPECT_EQ(aligned_pieces_of(65, 132, 32 * 65), 4u);
}

}  // namespace
}  // namespace mlakit::mla_v1
