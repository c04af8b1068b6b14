// Host-side work sharing over std::threads, for the CPU reference, the host FP8 codec and the
// synthetic inputs: one place that decides how many threads run and how they split the work.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace mlakit {

// Threads for `items` units of work: `requested` (<= 0: one per hardware thread), at most
// `items`, at least 1.
inline int worker_count(int requested, int64_t items) {
  const int64_t want = requested > 0 ? requested : int64_t(std::max(1u, std::thread::hardware_concurrency()));
  return int(std::max<int64_t>(1, std::min(want, items)));
}

// Calls worker(claim) once on each of `threads` threads, the caller's among them; claim() hands
// out 0, 1, ..., items - 1 from one counter, then `items` to every later call. A worker keeps its
// own state across the items it claims (which thread takes which item is not fixed, so each
// item's result must depend on the item alone).
template <class Worker>
void run_claiming(int64_t items, int threads, Worker&& worker) {
  std::atomic<int64_t> next{0};
  const auto claim = [&next, items] { return std::min(next.fetch_add(1), items); };
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back([&] { worker(claim); });
  worker(claim);
  for (std::thread& t : pool) t.join();
}

// Calls f(first, last) on consecutive ranges covering [0, n), about n / threads long and each a
// multiple of `align` but the last, one thread per range (the caller takes the first).
template <class F>
void run_ranges(int64_t n, int threads, int64_t align, F&& f) {
  if (n <= 0) return;
  int64_t chunk = (n + threads - 1) / std::max(threads, 1);
  chunk = (chunk + align - 1) / align * align;
  std::vector<std::thread> pool;
  for (int64_t first = chunk; first < n; first += chunk)
    pool.emplace_back([&f, first, last = std::min(n, first + chunk)] { f(first, last); });
  f(0, std::min(n, chunk));
  for (std::thread& t : pool) t.join();
}

}  // namespace mlakit
