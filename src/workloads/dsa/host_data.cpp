// DSA's q and caches: randn bf16 (workloads/randn.h), q per workload, caches per cache shape; the
// tiles of dsa-edge's FP8 edges bent into the randn cache; the FP8 cache quantized from the bf16 one.
#include <algorithm>
#include <cmath>

#include "base/bf16.h"
#include "mlakit/dsa_fp8.h"
#include "reference/dsa/fp8.h"
#include "workloads/dsa/suites.h"
#include "workloads/dsa/synth.h"
#include "workloads/randn.h"

namespace mlakit {
namespace {

using dsa_fp8::kTile;

// Every value of a tile times 2^e (exact in bf16 for the exponents used here).
void scale_tile(uint16_t* tile, int e) {
  for (int d = 0; d < kTile; ++d) tile[d] = float_to_bf16(std::ldexp(bf16_to_float(tile[d]), e));
}

// A tile whose largest magnitude is exactly `amax` (bf16), at channel `at`, with its sign kept:
// the randn values divided by 4 (about 1 at most) and clipped below amax.
void set_tile_amax(uint16_t* tile, float amax, int at) {
  for (int d = 0; d < kTile; ++d) {
    const float v = std::ldexp(bf16_to_float(tile[d]), -2);
    tile[d] = float_to_bf16(std::copysign(std::fmin(std::fabs(v), amax), v));
  }
  tile[at] = float_to_bf16(std::copysign(amax, bf16_to_float(tile[at])));
}

// DsaCacheValues::kFp8Tiles: slot s by s % 16 (the tile t = (s / 16) % 4 rotates through the row):
//   1: tile t all +0         3: tile t all -0        (amax 0: the scale clamps to 2^-13)
//   5: every tile * 2^-24    7: tile t * 2^-12       (amax / 448 under 1e-4: clamped, codes 0 or
//                                                     subnormal / normal e4m3 codes)
//   9: tile t amax 1.75 = 448 * 2^-8 (scale exactly 2^-8, that value becomes code 448)
//  11: tile t amax 1.7578125, the next bf16 (scale 2^-7)
//  13, one slot in 64 (s % 64 == 13): |tile t| * 2^6 (amax about 256: scale 1 or 2)
// and randn elsewhere. kpe stays randn. Tile 0 (dims 0-127), where every large tile falls (s % 64
// == 13 gives t = 0), is |x| in every slot: about 32 large tiles share it in a row of 2048, and
// terms of opposite sign there (~100 against ~1) can cancel to an output far below the terms.
// The bf16 roundings a kernel may make, of P (2^-9 of each term) and of a split's partial output
// (2^-9 of the split's average; docs/dsa-contract.md, "Precision"), then exceed the contest rule's
// 1e-2: seen at 128 heads with mixed-sign large tiles, and with positive large tiles among randn
// ones on a 4-split tiling (v2_fp8, seed 3474400492599127502: 0.5156 against 0.5273). With one
// sign per dim no split average opposes another, the merged value bounds every term's share, and
// those roundings stay under 1e-2 of the value.
void bend_fp8_tiles(int64_t num_slots, int ckv_dims, uint16_t* ckv) {
  for (int64_t s = 0; s < num_slots; ++s) {
    uint16_t* row = ckv + s * ckv_dims;
    for (int d = 0; d < kTile; ++d) row[d] &= 0x7fff;  // tile 0: one sign
    uint16_t* tile = row + int((s / 16) % (ckv_dims / kTile)) * kTile;
    switch (s % 16) {
      case 1: std::fill(tile, tile + kTile, uint16_t(0x0000)); break;
      case 3: std::fill(tile, tile + kTile, uint16_t(0x8000)); break;
      case 5:
        for (int t = 0; t < ckv_dims / kTile; ++t) scale_tile(row + t * kTile, -24);
        break;
      case 7: scale_tile(tile, -12); break;
      case 9: set_tile_amax(tile, 1.75f, int(s % kTile)); break;
      case 11: set_tile_amax(tile, 1.7578125f, int(s % kTile)); break;
      case 13:
        if (s % 64 == 13) {
          scale_tile(tile, 6);
          for (int d = 0; d < kTile; ++d) tile[d] &= 0x7fff;  // |x|
        }
        break;
      default: break;
    }
  }
}

}  // namespace

void make_dsa_queries(const DsaWorkload& w, uint64_t seed, DsaHostData* data) {
  const DsaProblem& p = w.problem;
  const int64_t rows = int64_t(p.num_tokens) * p.num_heads;
  const uint64_t name = synth::hash_string(w.name);
  data->q_nope.resize(size_t(rows * p.head_dim_ckv));
  data->q_pe.resize(size_t(rows * p.head_dim_kpe));
  fill_randn_bf16(data->q_nope.data(), int64_t(data->q_nope.size()), seed, randn_stream("q_nope", name));
  fill_randn_bf16(data->q_pe.data(), int64_t(data->q_pe.size()), seed, randn_stream("q_pe", name));
}

void make_dsa_caches(const DsaProblem& p, uint64_t seed, DsaHostData* data, DsaCacheValues values) {
  const int64_t slots = p.num_slots();
  const uint64_t shape = synth::mix(uint64_t(p.num_pages), uint64_t(p.page_size));
  data->kv.clear();
  data->kv.shrink_to_fit();
  data->ckv.resize(size_t(slots * p.head_dim_ckv));
  data->kpe.resize(size_t(slots * p.head_dim_kpe));
  fill_randn_bf16(data->ckv.data(), int64_t(data->ckv.size()), seed, randn_stream("ckv_cache", shape));
  fill_randn_bf16(data->kpe.data(), int64_t(data->kpe.size()), seed, randn_stream("kpe_cache", shape));
  if (values == DsaCacheValues::kFp8Tiles) bend_fp8_tiles(slots, p.head_dim_ckv, data->ckv.data());
}

void quantize_dsa_caches(const DsaProblem& p, DsaHostData* data) {
  const int64_t slots = p.num_slots();
  data->kv.resize(size_t(slots) * dsa_fp8::kRowBytes);
  fp8::quantize_cache(data->ckv.data(), data->kpe.data(), slots, data->kv.data());
  fp8::dequantize_cache(data->kv.data(), slots, data->ckv.data(), data->kpe.data());
}

}  // namespace mlakit
