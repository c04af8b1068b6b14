// The geometry of the 64-row wgmma consumer pair (kernels/common/wgmma_rows64.cuh), host-safe so
// that the kernels' traits (dsa_decode v2_fused h64, mla_decode v1_paged m64) size shared memory
// from the same numbers: 64 query rows (the M of every wgmma), two consumer warpgroups, 32-row ring
// stages of 9 swizzled 64-dim blocks (8 ckv + 1 kpe), Q as 9 blocks of 64 rows, P of a 64-row tile.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mlakit::kernels::rows64 {

constexpr int kRows = 64;                       // the M of every wgmma
constexpr int kWgs = 2;                         // consumer warpgroups: stage halves of S, dim halves of O
constexpr int kWgThreads = 128;
constexpr int kConsumerThreads = kWgs * kWgThreads;
constexpr int kStageRows = 32;                  // cache rows of one ring stage (S of one warpgroup)
constexpr int kDimV = 512, kDimK = 576;
constexpr int kBlocks = kDimK / 64;             // 9 swizzled 64-dim blocks per row (8 ckv + 1 kpe)
constexpr int kBlockBytes = kStageRows * 128;   // 4 KB: one block of a stage
constexpr int kStageBytes = kBlocks * kBlockBytes;   // 36 KB
// The seesaw (pair_seesaw) reads a 64-row tile as one operand: two stages interleaved per block,
// block k of the tile = [block k of its first stage | block k of its second] (rows 0-31, 32-63).
constexpr int kTileBlockBytes = 2 * kBlockBytes;     // 8 KB
constexpr int kTileBytes = kBlocks * kTileBlockBytes; // 72 KB
constexpr int kQBlockBytes = kRows * 128;       // 8 KB: one block of Q
constexpr int kQBytes = kBlocks * kQBlockBytes; // 72 KB
constexpr int kPBytes = kRows * 128;            // 8 KB: P of a 64-row tile, bf16
constexpr int kDimsPerWg = kDimV / kWgs;        // 256: the N of each PV wgmma
constexpr uint32_t kPairBarrier = 3;            // 1 and 2 stay free for per-warpgroup barriers
constexpr int kAlign = 1024;                    // the swizzle atom: operand blocks start on it
static_assert(kQBytes % kAlign == 0 && kPBytes % kAlign == 0 && kStageBytes % kAlign == 0,
              "every operand block starts on a swizzle atom");
// Dynamic shared memory a kernel of this pair asks for: its plan, and room to align the base.
template <class Plan>
constexpr size_t smem_bytes_for() { return sizeof(Plan) + kAlign; }

}  // namespace mlakit::kernels::rows64
