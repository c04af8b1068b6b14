// v1_paged's tiling: how one launch cuts the work (the persistent split-KV schedule of
// docs/mla-contract.md). Its name: c<ctas>x<stages>p<producers>, then g<gather> m<rows>
// w<whole> o<order> where they differ from their defaults ("c132x4p2", "c132x4p2g0",
// "c132x4p4g3m64o1"). Plain C++ (plan/tiling_fields.h).
#pragma once

#include <string>

#include "mlakit/status.h"
#include "plan/tiling_fields.h"

namespace mlakit::mla_v1 {

struct Tiling {
  int ctas = 1;       // c: CTAs of the persistent grid (the default: one per SM, times CTAs per SM)
  int stages = 4;     // x: 32-row ring stages in shared memory
  int producers = 2;  // p: warps that gather rows
  int gather = 1;     // g: 0 bulk ckv + cp.async kpe, 1 bulk copies, 2 cp.async, 3 tensor-map
                      //    boxes per 32-row stage (m64, pages of a multiple of 32 rows)
  int rows = 16;      // m: query rows per CTA, the M of the MMAs: 16 (mma.sync, one group per
                      //    query position and 16-head block) or 64 (wgmma, 64 of a request's
                      //    s_q x heads query rows per group)
  int whole = 8;      // w: schedule units (64-row tiles) a CTA's longest range may grow by to keep
                      //    every request whole instead of splitting some across CTAs (split pieces
                      //    store partials and merge at the end); 0: whole only when that costs
                      //    nothing
  int order = 0;      // o: the schedule of the 64-row consumer pair (m64): 0 lockstep (both
                      //    warpgroups on one tile: S halves, maxima and P meet in shared memory),
                      //    1 seesaw (each warpgroup S of its own tile of a pair, the running max
                      //    handed 0 -> 1 -> 0; wgmma_rows64.cuh)

  std::string name() const;
  static Status parse(const std::string& name, Tiling* out);
};

inline constexpr auto kTilingFields = std::to_array<TilingField<Tiling>>({
    {'c', &Tiling::ctas, true, 1, "ctas"},
    {'x', &Tiling::stages, true, 1, "stages"},
    {'p', &Tiling::producers, true, 1, "producers"},
    {'g', &Tiling::gather, false, 0, "gather"},
    {'m', &Tiling::rows, false, 1, "rows"},
    {'w', &Tiling::whole, false, 0, "whole"},
    {'o', &Tiling::order, false, 0, "order"},
});
// Past any request's length in units: always whole.
constexpr int kMaxWhole = 1 << 20;

inline std::string Tiling::name() const { return tiling_name(*this, kTilingFields); }
inline Status Tiling::parse(const std::string& name, Tiling* out) {
  Tiling t;
  MLAKIT_RETURN_IF_ERROR(parse_tiling(name, kTilingFields, "c132x4p2", &t));
  const auto bad = [&](const std::string& why) {
    return Status::invalid_argument("tiling: " + why + ", got '" + name + "'");
  };
  if (t.gather > 3) return bad("g must be 0, 1, 2 or 3");
  if (t.rows != 16 && t.rows != 64) return bad("m must be 16 or 64");
  if (t.whole > kMaxWhole) return bad("w must be 0.." + std::to_string(kMaxWhole));
  if (t.order > 1) return bad("o must be 0 (lockstep pair) or 1 (seesaw)");
  *out = t;
  return Status::ok();
}

}  // namespace mlakit::mla_v1
