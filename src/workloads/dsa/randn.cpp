// randn bf16 from a counter-based generator: element i depends only on (seed, stream, i), so the
// result is the same for any thread count and any chunking. Pairs (2p, 2p+1) share one
// Box-Muller draw from two splitmix64 outputs of counters 2p and 2p+1.
#include <algorithm>
#include <cmath>
#include <thread>
#include <vector>

#include "base/bf16.h"
#include "workloads/dsa/suites.h"
#include "workloads/dsa/synth.h"

namespace mlakit {

namespace {

// Below this many elements one thread is faster than starting several.
constexpr int64_t kMinParallel = int64_t(1) << 18;
constexpr double kTwoPi = 6.283185307179586476925;

void fill_range(uint16_t* dst, int64_t begin, int64_t end, uint64_t key) {
  // begin is even (chunks are aligned to pairs), so every pair is drawn once.
  for (int64_t pair = begin / 2; 2 * pair < end; ++pair) {
    const uint64_t a = synth::splitmix64(key + uint64_t(2 * pair) * 0x9e3779b97f4a7c15ull);
    const uint64_t b = synth::splitmix64(key + uint64_t(2 * pair + 1) * 0x9e3779b97f4a7c15ull);
    const double u1 = (double(a >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]: log never sees 0
    const double u2 = double(b >> 11) * 0x1.0p-53;          // [0, 1)
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double theta = kTwoPi * u2;
    const int64_t i = 2 * pair;
    dst[i] = float_to_bf16(float(r * std::cos(theta)));
    if (i + 1 < end) dst[i + 1] = float_to_bf16(float(r * std::sin(theta)));
  }
}

uint64_t stream_of(const char* tensor, uint64_t a, uint64_t b = 0) {
  return synth::mix(synth::hash_string(tensor), synth::mix(a, b));
}

}  // namespace

void fill_randn_bf16(uint16_t* dst, int64_t n, uint64_t seed, uint64_t stream) {
  if (dst == nullptr || n <= 0) return;
  const uint64_t key = synth::mix(seed, stream);
  int threads = int(std::max(1u, std::thread::hardware_concurrency()));
  if (n < kMinParallel) threads = 1;
  if (threads == 1) {
    fill_range(dst, 0, n, key);
    return;
  }
  // Even chunk sizes keep the two elements of a pair in one chunk.
  int64_t chunk = (n + threads - 1) / threads;
  chunk += chunk & 1;
  std::vector<std::thread> pool;
  for (int64_t begin = 0; begin < n; begin += chunk)
    pool.emplace_back(fill_range, dst, begin, std::min(n, begin + chunk), key);
  for (std::thread& t : pool) t.join();
}

void make_dsa_queries(const DsaWorkload& w, uint64_t seed, DsaHostData* data) {
  const DsaProblem& p = w.problem;
  const int64_t rows = int64_t(p.num_tokens) * p.num_heads;
  const uint64_t name = synth::hash_string(w.name);
  data->q_nope.resize(size_t(rows * p.head_dim_ckv));
  data->q_pe.resize(size_t(rows * p.head_dim_kpe));
  fill_randn_bf16(data->q_nope.data(), int64_t(data->q_nope.size()), seed, stream_of("q_nope", name));
  fill_randn_bf16(data->q_pe.data(), int64_t(data->q_pe.size()), seed, stream_of("q_pe", name));
}

void make_dsa_caches(const DsaProblem& p, uint64_t seed, DsaHostData* data) {
  const int64_t slots = p.num_slots();
  const uint64_t shape = synth::mix(uint64_t(p.num_pages), uint64_t(p.page_size));
  data->ckv.resize(size_t(slots * p.head_dim_ckv));
  data->kpe.resize(size_t(slots * p.head_dim_kpe));
  fill_randn_bf16(data->ckv.data(), int64_t(data->ckv.size()), seed, stream_of("ckv_cache", shape));
  fill_randn_bf16(data->kpe.data(), int64_t(data->kpe.size()), seed, stream_of("kpe_cache", shape));
}

}  // namespace mlakit
