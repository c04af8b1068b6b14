// The GPU quantizer of DeepSeek-V3.2's FP8 cache (mlakit/dsa_fp8.h): host-safe declaration.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace mlakit::dsa_fp8_quant {

// Strides already resolved (elements for ckv / kpe, bytes for the cache).
struct Params {
  const uint16_t* ckv;
  const uint16_t* kpe;
  int64_t ckv_stride_slot, kpe_stride_slot;
  uint8_t* cache;
  int64_t stride_page;  // bytes
  int64_t num_slots;
  int page_size;
};

cudaError_t launch(const Params& params, cudaStream_t stream);

}  // namespace mlakit::dsa_fp8_quant
