// randn bf16 for every op's synthetic q and caches: element i is a pure function of (seed, stream,
// i), whatever the thread count and chunking.
#pragma once

#include <cstdint>
#include <string_view>

namespace mlakit {

// randn bf16 (raw bits) into dst[0, n); multithreaded above a quarter million elements.
void fill_randn_bf16(uint16_t* dst, int64_t n, uint64_t seed, uint64_t stream);

// The stream of one tensor: its name mixed with up to two numbers (a workload's name hash, a
// cache shape), so that tensors and workloads draw independent values.
uint64_t randn_stream(std::string_view tensor, uint64_t a, uint64_t b = 0);

}  // namespace mlakit
