// DeepSeek-V3.2's FP8 cache for DSA decode: the 656-byte row, the quantization rule, and the GPU
// quantizer that writes such a cache from bf16 ckv / kpe (docs/dsa-contract.md, "The FP8 cache").
//
// One slot's row, 656 bytes, rows of a page contiguous:
//   [0, 512)    ckv quantized: 512 float8_e4m3fn (OCP E4M3, finite-only, max 448)
//   [512, 528)  4 fp32 scales, scale[i] for ckv channels [128 i, 128 i + 128)
//   [528, 656)  kpe: 64 bf16, not quantized
// Quantization of one 128-channel tile x (bf16):
//   scale = the smallest power of two >= max(amax(|x|) / 448, 1e-4)     (fp32 arithmetic)
//   q     = e4m3(x / scale), rounded to nearest even (|x / scale| <= 448 by construction)
// and dequantization is q * scale, exact in bf16 (a 3-bit mantissa times a power of two), so the
// dequantized cache is a bf16 cache and the bf16 contract applies to it unchanged.
// FlashMLA's quantizer (the format's origin) takes the power of two as 2^ceil(log2(.)) in fp32;
// that agrees with the rule above except when amax / 448 lies within an fp32 rounding of log2 above
// a power of two, where it may pick the power below (the quantized values are the same, 448 at
// most; the scale differs by 2). Decoding reads whatever scale the row holds.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "mlakit/status.h"

namespace mlakit {

namespace dsa_fp8 {
constexpr int kRowBytes = 656;
constexpr int kNopeBytes = 512;     // e4m3 ckv
constexpr int kScaleOffset = 512;   // 4 fp32
constexpr int kNumScales = 4;
constexpr int kTile = 128;          // ckv channels per scale
constexpr int kRopeOffset = 528;    // 64 bf16
constexpr int kRopeBytes = 128;
constexpr float kE4m3Max = 448.f;
constexpr float kMinScale = 1e-4f;  // before rounding up to a power of two: 2^-13
static_assert(kRopeOffset + kRopeBytes == kRowBytes && kRowBytes % 16 == 0, "656 = 41 x 16 bytes");
}  // namespace dsa_fp8

// The GPU quantizer's arguments: slot s = page * page_size + row of the bf16 caches becomes row
// `row` of page `page` of kv_cache.
struct DsaFp8QuantizeArgs {
  int num_pages = 0;
  int page_size = 64;
  const void* ckv = nullptr;    // bf16 [num_pages * page_size, 512]
  const void* kpe = nullptr;    // bf16 [num_pages * page_size, 64]
  int64_t ckv_stride_slot = 0;  // elements, 0 = 512
  int64_t kpe_stride_slot = 0;  // elements, 0 = 64
  void* kv_cache = nullptr;     // uint8 [num_pages, page_size, 656] (written)
  int64_t kv_stride_page = 0;   // bytes, 0 = page_size * 656; a multiple of 16
};

// Quantizes every slot (asynchronous on `stream`; never synchronizes, never allocates). Errors
// name the argument: a null or misaligned pointer, a stride below a row or not 16-byte aligned.
// Bitwise the same as the CPU quantizer (reference/dsa/fp8.h) for finite inputs.
Status dsa_quantize_fp8(const DsaFp8QuantizeArgs& args, cudaStream_t stream);

}  // namespace mlakit
