// Registry entry of dsa_decode.floor_gather.bf16, the gather floor of the DSA op (KernelInfo::
// floor): the same row split and ring as v2_fused, no math, no output. Tiling fields as v2's;
// g = 3 selects the register-load kernel (no ring; stages and p unused, any split count).
#include "kernels/dsa_decode/floor_gather/entry.h"

#include <cstdio>

#include "base/cuda_status.h"
#include "base/format.h"
#include "kernels/dsa_decode/common/ring_plan.h"
#include "kernels/dsa_decode/floor_gather/launch.h"
#include "kernels/dsa_decode/floor_gather/tiling.h"
#include "kernels/dsa_decode/floor_gather/traits.h"

namespace mlakit::dsa_floor {
namespace {

constexpr int kMaxSplits = 64;
constexpr int kDefaultMinRows = 64;

Status check_instance(const Tiling& t, const DeviceFacts& dev) {
  using dsa_ring::reject;
  if (t.merge_head_groups != 1) return reject(t, "the floor merges nothing: m must be 1");
  if (t.gather < 0 || t.gather > int(Gather::kLdg))
    return reject(t, "g (gather) must be 0 (bulk ckv + cp.async kpe), 1 (bulk), 2 (cp.async) or 3 (register "
                     "loads); got " + std::to_string(t.gather));
  if (t.gather == int(Gather::kLdg)) return Status::ok();
  if (!is_instantiated(Pipe{t.stages, t.producers}))
    return reject(t, "(stages, producers) = (" + std::to_string(t.stages) + ", " + std::to_string(t.producers) +
                         ") is not instantiated");
  if (smem_bytes(t.stages) > size_t(dev.smem_per_block_optin))
    return reject(t, "shared-memory plan " + format_kb(smem_bytes(t.stages)) + " exceeds the per-block limit of " +
                         dev.describe());
  return Status::ok();
}

class FloorGather final : public VariantKernel<DsaProblem, Tiling> {
 public:
  const KernelInfo& info() const override {
    static const KernelInfo k{"dsa_decode.floor_gather.bf16", "dsa_decode", "floor_gather", "bf16", dsa_ring::head_counts(),
                              /*rank=*/0,
                              "gather floor: v2_fused's rows into shared memory, no math, no output",
                              ArchRequirement{9, 0, true}, /*floor=*/true};
    return k;
  }

  std::vector<Tiling> tilings(const DsaProblem&) const override {
    return dsa_ring::ring_search_space<Tiling>(kMaxSplits,
                                               {int(Gather::kHybrid), int(Gather::kBulk), int(Gather::kCpAsync)});
  }

  Tiling default_for(const DsaProblem& p, const DeviceFacts& dev) const override {
    return dsa_ring::ring_tiling<Tiling>(dsa_ring::default_splits(p, dev, kMaxSplits, kDefaultMinRows), kDefaultMinRows,
                                         kPairedPipe, int(Gather::kHybrid));
  }

  Status validate(const DsaProblem& p, const Tiling& t, const DeviceFacts& dev) const override {
    MLAKIT_RETURN_IF_ERROR(dsa_ring::check_problem("floor_gather", p, t.gather == int(Gather::kLdg) ? kLdgMaxTopk : kMaxTopk));
    MLAKIT_RETURN_IF_ERROR(check_instance(t, dev));
    return dsa_ring::check_split(p, t, dev, kMaxSplits, /*co_resident=*/false, kCtasPerSm);
  }

  size_t workspace(const DsaProblem&, const Tiling&) const override { return 0; }

  std::string describe(const DsaProblem& p, const Tiling& t) const override {
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s %s: grid %d x %d, %s", info().key.c_str(), t.name().c_str(), t.num_splits,
                  p.num_tokens,
                  t.gather == int(Gather::kLdg) ? "8 warps of 16-byte register loads per CTA"
                                                : ("4 waiting + " + std::to_string(t.producers) +
                                                   " producer warps, " + format_kb(smem_bytes(t.stages)) +
                                                   " shared memory").c_str());
    return buf;
  }

  Status run(const DsaProblem& p, const Tiling& t, const DsaTensors& x, void*,
             cudaStream_t stream) const override {
    const Params a = dsa_ring::ring_params<Params>(p, t, x);
    return cuda_status(dsa_floor::launch(a, Pipe{t.stages, t.producers}, Gather(t.gather), stream),
                       info().key + " launch");
  }
};

}  // namespace

const DsaKernel& entry() {
  static const FloorGather kernel;
  return kernel;
}

}  // namespace mlakit::dsa_floor
