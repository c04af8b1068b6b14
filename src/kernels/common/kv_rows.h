// A KV row as every ring kernel holds it in shared memory (dsa_decode and mla_decode alike): the
// 512-wide latent (K and V at once) and the 64-wide rope key of one slot, gathered into a
// 32-row ring stage. Host-safe: the planners size shared memory from the same numbers.
#pragma once

#include <cstddef>

namespace mlakit::kernels {

constexpr int kDimV = 512;               // ckv: the latent, K and V at once
constexpr int kDimR = 64;                // kpe: the rope key
constexpr int kDimK = kDimV + kDimR;     // 576, the QK reduction length
constexpr int kCkvBytes = kDimV * 2;     // 1024: one bulk copy
constexpr int kKpeBytes = kDimR * 2;     // 128: a second bulk copy
constexpr int kRowBytes = kCkvBytes + kKpeBytes;  // 1152 gathered bytes per slot
// A gathered row sits at a 1168-byte pitch: 16 B past a multiple of 128 B, so the 8 row addresses
// of one ldmatrix phase fall into 8 different 16-byte bank groups (1152 would put all 8 in one).
constexpr int kRowPad = 8;                      // bf16 elements
constexpr int kKvPitch = kDimK + kRowPad;       // 584 bf16 elements per smem row
// One ring stage: the rows one producer step requests and one mbarrier phase covers.
constexpr int kStageRows = 32;
constexpr int kStageElems = kStageRows * kKvPitch;  // bf16 elements of one stage
constexpr size_t kStageBytes = size_t(kStageElems) * 2;  // 37,376 B
static_assert(kKvPitch * 2 % 16 == 0 && kCkvBytes % 16 == 0 && kKpeBytes % 16 == 0,
              "bulk copies need 16-byte aligned destinations and sizes");
static_assert((kKvPitch * 2) % 128 == 16, "the row pitch must be 16 B past a multiple of 128 B");

// A ring's compiled shape: its stages and the producer warps that fill them.
struct Pipe {
  int stages, producers;
};

}  // namespace mlakit::kernels
