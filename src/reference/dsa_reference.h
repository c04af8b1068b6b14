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

// Multithreaded over tokens (num_threads = 0: hardware concurrency).
Status dsa_reference(const DsaProblem& problem, const DsaHostInputs& inputs, IndexPolicy policy,
                     DsaReferenceOutput* out, int num_threads = 0);

}  // namespace mlakit
