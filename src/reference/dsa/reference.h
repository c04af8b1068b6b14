// The DSA CPU reference: exactly the contract of include/mlakit/dsa.h, accumulated in fp64.
#pragma once

#include <cstdint>
#include <vector>

#include "mlakit/dsa.h"

namespace mlakit {

// Host views of the inputs: bf16 as raw bits, every tensor contiguous.
struct DsaHostInputs {
  const uint16_t* q_nope = nullptr;  // [T, H, ckv]
  const uint16_t* q_pe = nullptr;    // [T, H, kpe]
  const uint16_t* ckv = nullptr;     // [num_pages * page_size, ckv]
  const uint16_t* kpe = nullptr;     // [num_pages * page_size, kpe]
  const int32_t* indices = nullptr;  // [T, topk]
  float sm_scale = 0.f;
};

struct DsaReferenceOutput {
  std::vector<double> output;  // [T, H, ckv]; 0 for empty rows
  std::vector<double> lse;     // [T, H], base 2; -inf for empty rows
};

enum class IndexPolicy {
  kTreatInvalidAsPadding,  // what the kernels do
  kReject,                 // checked mode: any index < -1 or >= num_slots is an error
};

// Multithreaded over tokens (num_threads = 0: hardware concurrency). Results do not depend on
// num_threads. Fails (invalid_argument) on an invalid problem, a null pointer, or under kReject
// an index that is neither -1 nor a slot: "sparse_indices: 1 entries are neither -1 nor a slot
// in [0, 541568); first at [3, 17] = 541568" (the device check says the same).
Status dsa_reference(const DsaProblem& problem, const DsaHostInputs& inputs, IndexPolicy policy,
                     DsaReferenceOutput* out, int num_threads = 0);

// The checked mode on the host: ok when every index of [T, topk] is -1 or a slot in
// [0, num_slots); else invalid_argument naming the first bad one (token t, position k, value) and
// how many there are. `num_invalid` (optional) receives the count either way.
Status dsa_check_indices_host(const DsaProblem& problem, const int32_t* indices,
                              int64_t* num_invalid = nullptr);

}  // namespace mlakit
