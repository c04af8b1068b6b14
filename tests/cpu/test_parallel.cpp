// base/parallel.h: thread counts, every item claimed once, ranges that cover [0, n) on their
// alignment. (That the references built on it do not depend on the thread count is tested with
// them: DsaReference.ThreadCountDoesNotChangeResult and the MLA reference's tests.)
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "base/parallel.h"

namespace mlakit {
namespace {

TEST(Parallel, WorkerCountIsTheRequestCappedByTheItems) {
  EXPECT_EQ(worker_count(4, 100), 4);
  EXPECT_EQ(worker_count(8, 3), 3);
  EXPECT_EQ(worker_count(8, 0), 1);
  EXPECT_GE(worker_count(0, 1 << 20), 1);  // one per hardware thread
  EXPECT_EQ(worker_count(-1, 1), 1);
}

TEST(Parallel, EveryItemIsClaimedExactlyOnce) {
  for (int threads : {1, 2, 7})
    for (int64_t items : {int64_t(0), int64_t(1), int64_t(5), int64_t(1000)}) {
      std::vector<std::atomic<int>> seen(size_t(items) + 1);
      std::atomic<int> workers{0};
      run_claiming(items, threads, [&](auto claim) {
        ++workers;
        for (int64_t i = claim(); i < items; i = claim()) ++seen[size_t(i)];
        EXPECT_EQ(claim(), items);  // stays at the end once exhausted
      });
      EXPECT_EQ(workers.load(), threads);
      for (int64_t i = 0; i < items; ++i) EXPECT_EQ(seen[size_t(i)].load(), 1) << items << " item " << i;
    }
}

TEST(Parallel, RangesCoverEverythingOnTheirAlignment) {
  for (int threads : {1, 3, 8})
    for (int64_t n : {int64_t(1), int64_t(7), int64_t(100), int64_t(1001)})
      for (int64_t align : {int64_t(1), int64_t(2), int64_t(4096)}) {
        std::mutex m;
        std::vector<std::pair<int64_t, int64_t>> ranges;
        run_ranges(n, threads, align, [&](int64_t first, int64_t last) {
          std::lock_guard<std::mutex> lock(m);
          ranges.emplace_back(first, last);
        });
        std::sort(ranges.begin(), ranges.end());
        ASSERT_FALSE(ranges.empty());
        EXPECT_LE(ranges.size(), size_t(threads));
        int64_t at = 0;
        for (const auto& [first, last] : ranges) {
          EXPECT_EQ(first, at);
          EXPECT_GT(last, first);
          if (last != n) EXPECT_EQ((last - first) % align, 0) << n << " / " << threads << " / " << align;
          at = last;
        }
        EXPECT_EQ(at, n);
      }
  int calls = 0;
  run_ranges(0, 4, 1, [&](int64_t, int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace mlakit
