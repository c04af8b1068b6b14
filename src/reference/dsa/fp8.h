// The FP8 cache on the host (mlakit/dsa_fp8.h): the E4M3 codec, the scale rule, one row's
// quantizer and dequantizer, and whole caches. The GPU quantizer must agree with these bit for bit;
// the workbench builds FP8 inputs with them and runs the reference on the dequantized cache.
#pragma once

#include <cstdint>
#include <vector>

#include "mlakit/dsa.h"

namespace mlakit::fp8 {

// OCP E4M3 (finite-only "fn" variant, max 448): round to nearest even, saturating to +-448; NaN
// gives 0x7f (sign kept).
uint8_t e4m3_from_float(float x);
float e4m3_to_float(uint8_t bits);

// The tile scale for a tile whose largest magnitude is `amax` (finite): the smallest power of two
// >= max(amax / 448, 1e-4), amax / 448 rounded to fp32 first.
float tile_scale(float amax);

// One slot: ckv (512 bf16 bits) and kpe (64 bf16 bits) -> its 656-byte row, and back (exact).
void quantize_row(const uint16_t* ckv, const uint16_t* kpe, uint8_t* row);
void dequantize_row(const uint8_t* row, uint16_t* ckv, uint16_t* kpe);

// Whole caches, slots in order, contiguous: ckv [slots, 512], kpe [slots, 64] <-> [slots, 656].
// Spread over std::threads (num_threads = 0: hardware concurrency); the result does not depend on it.
void quantize_cache(const uint16_t* ckv, const uint16_t* kpe, int64_t num_slots, uint8_t* cache,
                    int num_threads = 0);
void dequantize_cache(const uint8_t* cache, int64_t num_slots, uint16_t* ckv, uint16_t* kpe,
                      int num_threads = 0);

}  // namespace mlakit::fp8
