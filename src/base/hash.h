// Hashing of plain value types (problem structs) for plan caches. A problem hashes its object
// bytes: every field counts, a field added later included, without a list to keep in step. That is
// equal to hashing the values only when the type has no padding and no floating-point fields
// (+0.0 == -0.0 but their bytes differ); hash_object_bytes refuses any other type at compile time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace mlakit {

// FNV-1a over `n` bytes, then a final mix so that nearby values spread over the buckets.
inline size_t hash_bytes(const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  return size_t(h ^ (h >> 33));
}

template <class T>
size_t hash_object_bytes(const T& value) {
  static_assert(std::has_unique_object_representations_v<T>,
                "hash_object_bytes needs a type whose equal values have equal bytes (integer and "
                "enum fields only, no padding); give this type its own hash");
  return hash_bytes(&value, sizeof value);
}

inline size_t hash_combine(size_t seed, size_t value) {
  return seed ^ (value + 0x9e3779b97f4a7c15ull + (seed << 6) + (seed >> 2));
}

}  // namespace mlakit
