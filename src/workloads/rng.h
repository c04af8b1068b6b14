// The seeded generator every op's synthesis uses: portable output sequences (no
// std::*_distribution, whose results vary between standard libraries), string hashes that seed a
// workload by its name, and a mixer that derives independent streams.
#pragma once

#include <cstdint>
#include <string_view>

namespace mlakit::synth {

uint64_t splitmix64(uint64_t x);
// A stable 64-bit hash of a string (FNV-1a, then mixed): seeds per workload name.
uint64_t hash_string(std::string_view s);
uint64_t mix(uint64_t a, uint64_t b);

// Seeded generator with a portable output sequence.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(splitmix64(seed ^ 0x6a09e667f3bcc909ull)) {}
  uint64_t next();
  // Uniform in [0, n), n >= 1, unbiased (Lemire's multiply-shift with rejection).
  uint64_t uniform(uint64_t n);
  // Uniform in [lo, hi].
  int64_t range(int64_t lo, int64_t hi) { return lo + int64_t(uniform(uint64_t(hi - lo) + 1)); }

 private:
  uint64_t state_;
};

}  // namespace mlakit::synth
