// randn bf16 from a counter-based generator: element i depends only on (seed, stream, i), so the
// result is the same for any thread count and any chunking. Pairs (2p, 2p+1) share one
// Box-Muller draw from two splitmix64 outputs of counters 2p and 2p+1.
#include "workloads/randn.h"

#include <algorithm>
#include <cmath>

#include "base/bf16.h"
#include "base/parallel.h"
#include "workloads/rng.h"

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

}  // namespace

void fill_randn_bf16(uint16_t* dst, int64_t n, uint64_t seed, uint64_t stream) {
  if (dst == nullptr || n <= 0) return;
  const uint64_t key = synth::mix(seed, stream);
  // Even chunk sizes keep the two elements of a pair in one chunk.
  run_ranges(n, n < kMinParallel ? 1 : worker_count(0, n), 2,
             [&](int64_t first, int64_t last) { fill_range(dst, first, last, key); });
}

uint64_t randn_stream(std::string_view tensor, uint64_t a, uint64_t b) {
  return synth::mix(synth::hash_string(tensor), synth::mix(a, b));
}

}  // namespace mlakit
