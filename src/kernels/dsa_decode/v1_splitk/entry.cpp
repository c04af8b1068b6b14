// Registry entry of dsa_decode.v1_splitk.bf16: its search space, default tiling, validation
// against problem and device, --explain, and the launch. Every size comes from traits.h; the
// register need from the compiled kernel when a GPU is present (launch.h).
#include "kernels/dsa_decode/v1_splitk/entry.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <vector>

#include "base/cuda_status.h"
#include "base/format.h"
#include "kernels/common/resources.h"
#include "kernels/dsa_decode/v1_splitk/launch.h"
#include "kernels/dsa_decode/v1_splitk/tiling.h"
#include "kernels/dsa_decode/v1_splitk/traits.h"

namespace mlakit::dsa_v1 {
namespace {

int ceil_div(int a, int b) { return (a + b - 1) / b; }

// Slots per split, rounded up to whole tiles; the launch uses ceil(topk / split_len) splits.
int split_len(const DsaProblem& p, const Tiling& t) {
  return ceil_div(ceil_div(p.topk, t.num_splits), kBlockN) * kBlockN;
}
int effective_splits(const DsaProblem& p, const Tiling& t) { return ceil_div(p.topk, split_len(p, t)); }
int max_splits(const DsaProblem& p) { return std::max(1, ceil_div(p.topk, kBlockN)); }

// "1, 2 or 3"
std::string or_list(const std::vector<int>& values) {
  std::string s;
  for (size_t i = 0; i < values.size(); ++i)
    s += (i == 0 ? "" : i + 1 == values.size() ? " or " : ", ") + std::to_string(values[i]);
  return s;
}
template <int... S>
std::vector<int> values_of(std::integer_sequence<int, S...>) { return {S...}; }
std::vector<int> planned_stages() {
  std::vector<int> v;
  for (int s = 1; s <= kMaxPlannedStages; ++s) v.push_back(s);
  return v;
}
std::vector<int> merge_head_groups() {
  std::vector<int> v;
  for (int g = 1; g <= kHeads; ++g)
    if (is_merge_head_groups(g)) v.push_back(g);
  return v;
}

// Registers per thread of the `stages` instantiation: the compiled kernel's when the facts are a
// live device's (read once per stage count), else the need traits.h documents.
int registers_needed(int stages, const DeviceFacts& dev) {
  if (!dev.live) return documented_registers(stages);
  static std::array<std::atomic<int>, kMaxPlannedStages + 1> known{};
  if (int regs = known[size_t(stages)].load(std::memory_order_relaxed); regs > 0) return regs;
  cudaFuncAttributes attr;
  if (kernel_attributes(stages, &attr) != cudaSuccess || attr.numRegs <= 0) {
    cudaGetLastError();  // no image for this device: not sticky, and the documented need holds
    return documented_registers(stages);
  }
  known[size_t(stages)].store(attr.numRegs, std::memory_order_relaxed);
  return attr.numRegs;
}

Status reject(const Tiling& t, const std::string& why) {
  return Status::unsupported("tiling " + t.name() + ": " + why);
}

Status check_problem(const DsaProblem& p) {
  if (p.num_heads != kHeads)
    return Status::unsupported("v1_splitk runs 16 heads (the M of one m16n8k16 MMA); got num_heads=" +
                               std::to_string(p.num_heads));
  if (p.head_dim_ckv != kDimV || p.head_dim_kpe != kDimR)
    return Status::unsupported("v1_splitk needs ckv 512 and kpe 64; got ckv=" +
                               std::to_string(p.head_dim_ckv) + " kpe=" + std::to_string(p.head_dim_kpe));
  return Status::ok();
}

// Shared memory per CTA and per SM, the instantiation, registers: what one CTA needs of the SM.
Status check_resources(const Tiling& t, const DeviceFacts& dev) {
  if (t.block_n != kBlockN)
    return reject(t, "v1_splitk tiles 64 slots (one n8 column tile of S per warp); block_n=" +
                         std::to_string(t.block_n));
  const size_t smem = smem_bytes(t.stages);
  if (smem == 0) return reject(t, "stages must be " + or_list(planned_stages()) + "; got " + std::to_string(t.stages));
  if (smem > size_t(dev.smem_per_block_optin))
    return reject(t, "shared-memory plan " + format_kb(smem) + " (" + std::to_string(t.stages) + " stages x " +
                         std::to_string(kBlockN) + " rows x " + std::to_string(kKvPitch * 2) +
                         " B + Q + P + slots) exceeds the " + format_kb(size_t(dev.smem_per_block_optin)) +
                         " per-block limit of " + dev.describe());
  if (!is_instantiated(t.stages))
    return reject(t, "stages=" + std::to_string(t.stages) + " is not instantiated (" +
                         or_list(values_of(InstantiatedStages{})) + ")");
  const int ctas = min_ctas_per_sm(t.stages);
  if (size_t(ctas) * smem > size_t(dev.smem_per_sm))
    return reject(t, std::to_string(ctas) + " CTAs x " + format_kb(smem) + " exceed the " +
                         format_kb(size_t(dev.smem_per_sm)) + " shared memory of one SM");
  const int reg_cap = kernels::register_cap(dev, kThreads, ctas);
  const int regs = registers_needed(t.stages, dev);
  if (reg_cap < regs)
    return reject(t, std::to_string(ctas) + " CTAs x " + std::to_string(kThreads) + " threads leave " +
                         std::to_string(reg_cap) + " registers per thread; the " +
                         std::to_string(t.stages) + "-stage kernel needs " + std::to_string(regs));
  return Status::ok();
}

// How the tiling cuts topk into splits, and the merge of the splits.
Status check_splits(const DsaProblem& p, const Tiling& t) {
  if (t.num_splits < 1 || t.num_splits > max_splits(p))
    return reject(t, "num_splits must be in [1, " + std::to_string(max_splits(p)) + "] (topk " +
                         std::to_string(p.topk) + " in " + std::to_string(kBlockN) + "-slot tiles); got " +
                         std::to_string(t.num_splits));
  if (split_len(p, t) > kMaxSplitSlots)
    return reject(t, "a split of " + std::to_string(split_len(p, t)) + " slots exceeds the " +
                         std::to_string(kMaxSplitSlots) + " one CTA compacts; use num_splits >= " +
                         std::to_string(ceil_div(p.topk, kMaxSplitSlots)));
  if (!is_merge_head_groups(t.merge_head_groups))
    return reject(t, "merge_head_groups must be " + or_list(merge_head_groups()) + " (" +
                         std::to_string(kMergeThreadsPerHead) + " threads per head, at most " +
                         std::to_string(kMergeMaxThreads) + " per CTA); got " +
                         std::to_string(t.merge_head_groups));
  return Status::ok();
}

class V1SplitK final : public VariantKernel<DsaProblem, Tiling> {
 public:
  const KernelInfo& info() const override {
    static const KernelInfo k{"dsa_decode.v1_splitk.bf16", "dsa_decode", "v1_splitk", "bf16", {kHeads},
                              /*rank=*/1,
                              "split-K gather + mma.sync m16n8k16 + base-2 online softmax, "
                              "parallel LSE merge (PDL)",
                              ArchRequirement{9, 0, true}};
    return k;
  }

  std::vector<Tiling> tilings(const DsaProblem& p) const override {
    std::vector<Tiling> out;
    for (int splits = 1; splits <= max_splits(p); splits *= 2)
      for (int stages : planned_stages())
        for (int groups : {4, 8}) {
          if (splits == 1 && groups != 4) continue;  // no merge kernel: the field is unused
          out.push_back(Tiling{splits, kBlockN, stages, groups});
        }
    return out;
  }

  Tiling default_for(const DsaProblem& p, const DeviceFacts& dev) const override {
    // Aim at about one CTA per SM: splits = the power of two nearest below SMs / T, within
    // [the fewest splits a CTA's 2048-slot compaction allows, one 64-slot tile per split].
    const int min_splits = ceil_div(p.topk, kMaxSplitSlots);
    const int sms = dev.num_sms > 0 ? dev.num_sms : 132;
    int splits = 1;
    while (splits * 2 * p.num_tokens <= sms) splits *= 2;
    splits = std::clamp(splits, min_splits, max_splits(p));
    return Tiling{splits, kBlockN, kDefaultStages, kMergeMinHeadGroups};
  }

  Status validate(const DsaProblem& p, const Tiling& t, const DeviceFacts& dev) const override {
    MLAKIT_RETURN_IF_ERROR(check_problem(p));
    MLAKIT_RETURN_IF_ERROR(check_resources(t, dev));
    return check_splits(p, t);
  }

  size_t workspace(const DsaProblem& p, const Tiling& t) const override {
    return dsa_v1::workspace_bytes(p.num_tokens, effective_splits(p, t));
  }

  std::string describe(const DsaProblem& p, const Tiling& t) const override {
    const int splits = effective_splits(p, t);
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "%s %s: split kernel grid %d x %d (tokens x splits of %d slots), %d threads, "
                  "%s shared memory, %d stage(s) of %d rows; %s; workspace %s",
                  info().key.c_str(), t.name().c_str(), p.num_tokens, splits, split_len(p, t), kThreads,
                  format_kb(smem_bytes(t.stages)).c_str(), t.stages, kBlockN,
                  splits > 1 ? ("merge kernel grid " + std::to_string(p.num_tokens) + " x " +
                                std::to_string(t.merge_head_groups) + " (PDL)").c_str()
                             : "fused epilogue, no merge",
                  format_kb(workspace(p, t)).c_str());
    return buf;
  }

  Status run(const DsaProblem& p, const Tiling& t, const DsaTensors& x, void* workspace,
             cudaStream_t stream) const override {
    const int splits = effective_splits(p, t);
    Params a{};
    a.io = x;
    const size_t rows = size_t(p.num_tokens) * splits * kHeads;
    a.part_o = splits > 1 ? reinterpret_cast<float*>(static_cast<char*>(workspace) + kWorkspacePartials) : nullptr;
    a.part_m = splits > 1 ? a.part_o + rows * kDimV : nullptr;
    a.part_l = splits > 1 ? a.part_m + rows : nullptr;
    a.num_slots = p.num_slots();
    a.num_tokens = p.num_tokens;
    a.topk = p.topk;
    a.num_splits = splits;
    a.split_len = split_len(p, t);
    a.scale_log2 = float(double(x.sm_scale) * 1.4426950408889634);
    return cuda_status(dsa_v1::launch(a, t.stages, t.merge_head_groups, stream), info().key + " launch");
  }
};

}  // namespace

const DsaKernel& entry() {
  static const V1SplitK kernel;
  return kernel;
}

}  // namespace mlakit::dsa_v1
