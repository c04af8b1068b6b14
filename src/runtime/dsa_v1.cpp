// Registry entry of dsa_decode.v1_splitk.bf16: its search space, default tiling, validation
// against problem and device, and the launch (device code: src/kernels/dsa_decode/v1_splitk/).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/cuda_status.h"
#include "base/format.h"
#include "kernels/dsa_decode/v1_splitk/launch.h"
#include "kernels/dsa_decode/v1_splitk/traits.h"
#include "runtime/registry.h"

namespace mlakit {
namespace {

namespace v1 = dsa_v1;

int ceil_div(int a, int b) { return (a + b - 1) / b; }

// Slots per split, rounded up to whole tiles; the launch uses ceil(topk / split_len) splits.
int split_len(const DsaProblem& p, const DsaTiling& t) {
  return ceil_div(ceil_div(p.topk, t.num_splits), v1::kBlockN) * v1::kBlockN;
}
int effective_splits(const DsaProblem& p, const DsaTiling& t) { return ceil_div(p.topk, split_len(p, t)); }

class DsaV1SplitK final : public DsaKernel {
 public:
  const KernelInfo& info() const override {
    static const KernelInfo k{"dsa_decode.v1_splitk.bf16", "dsa_decode", "v1_splitk", "bf16",
                              "split-K gather + mma.sync m16n8k16 + base-2 online softmax, "
                              "parallel LSE merge (PDL)",
                              ArchRequirement{9, 0, true}};
    return k;
  }

  std::vector<DsaTiling> search_space(const DsaProblem& p) const override {
    std::vector<DsaTiling> out;
    const int max_splits = std::max(1, ceil_div(p.topk, v1::kBlockN));
    for (int splits = 1; splits <= max_splits; splits *= 2)
      for (int stages : {1, 2, 3})
        for (int groups : {4, 8}) {
          if (splits == 1 && groups != 4) continue;  // no merge kernel: the field is unused
          out.push_back(DsaTiling{splits, v1::kBlockN, stages, groups});
        }
    return out;
  }

  DsaTiling default_tiling(const DsaProblem& p, const DeviceFacts& dev) const override {
    // Aim at about one CTA per SM: splits = the power of two nearest below SMs / T, within
    // [the fewest splits a CTA's 2048-slot compaction allows, one 64-slot tile per split].
    const int max_splits = std::max(1, ceil_div(p.topk, v1::kBlockN));
    const int min_splits = ceil_div(p.topk, v1::kMaxSplitSlots);
    const int sms = dev.num_sms > 0 ? dev.num_sms : 132;
    int splits = 1;
    while (splits * 2 * p.num_tokens <= sms) splits *= 2;
    splits = std::clamp(splits, min_splits, max_splits);
    return DsaTiling{splits, v1::kBlockN, 2, 4};
  }

  Status validate(const DsaProblem& p, const DsaTiling& t, const DeviceFacts& dev) const override {
    const auto reject = [&](const std::string& why) {
      return Status::unsupported("tiling " + t.name() + ": " + why);
    };
    MLAKIT_RETURN_IF_ERROR(p.validate());
    MLAKIT_RETURN_IF_ERROR(check_arch(info().arch, dev));
    if (p.num_heads != v1::kHeads)
      return Status::unsupported("v1_splitk runs 16 heads (the M of one m16n8k16 MMA); got num_heads=" +
                                 std::to_string(p.num_heads));
    if (p.head_dim_ckv != v1::kDimV || p.head_dim_kpe != v1::kDimR)
      return Status::unsupported("v1_splitk needs ckv 512 and kpe 64; got ckv=" +
                                 std::to_string(p.head_dim_ckv) + " kpe=" + std::to_string(p.head_dim_kpe));
    if (t.block_n != v1::kBlockN)
      return reject("v1_splitk tiles 64 slots (one n8 column tile of S per warp); block_n=" +
                    std::to_string(t.block_n));
    const size_t smem = v1::smem_bytes(t.stages);
    if (smem == 0) return reject("stages must be 1, 2 or 3; got " + std::to_string(t.stages));
    if (smem > size_t(dev.smem_per_block_optin))
      return reject("shared-memory plan " + format_kb(smem) + " (" + std::to_string(t.stages) +
                    " stages x 64 rows x 1168 B + Q + P + slots) exceeds the " +
                    format_kb(dev.smem_per_block_optin) + " per-block limit of " + dev.describe());
    if (t.stages > 2) return reject("stages=" + std::to_string(t.stages) + " is not instantiated (1 or 2)");
    const int min_blocks = t.stages == 1 ? 2 : 1;  // __launch_bounds__ of the instantiation
    if (size_t(min_blocks) * smem > size_t(dev.smem_per_sm))
      return reject(std::to_string(min_blocks) + " CTAs x " + format_kb(smem) + " exceed the " +
                    format_kb(dev.smem_per_sm) + " shared memory of one SM");
    const int reg_cap = std::min(dev.regs_per_thread_max, dev.regs_per_sm / (v1::kThreads * min_blocks));
    if (reg_cap < 125)  // ptxas: 140 registers with 2 stages, 125 under the 2-CTA cap of 1 stage
      return reject(std::to_string(min_blocks) + " CTAs x " + std::to_string(v1::kThreads) +
                    " threads leave " + std::to_string(reg_cap) +
                    " registers per thread; the kernel needs about 125");
    const int max_splits = std::max(1, ceil_div(p.topk, v1::kBlockN));
    if (t.num_splits < 1 || t.num_splits > max_splits)
      return reject("num_splits must be in [1, " + std::to_string(max_splits) + "] (topk " +
                    std::to_string(p.topk) + " in 64-slot tiles); got " + std::to_string(t.num_splits));
    if (split_len(p, t) > v1::kMaxSplitSlots)
      return reject("a split of " + std::to_string(split_len(p, t)) +
                    " slots exceeds the 2048 one CTA compacts; use num_splits >= " +
                    std::to_string(ceil_div(p.topk, v1::kMaxSplitSlots)));
    if (t.merge_head_groups != 4 && t.merge_head_groups != 8 && t.merge_head_groups != 16)
      return reject("merge_head_groups must be 4, 8 or 16 (64 threads per head, at most 256 per CTA); got " +
                    std::to_string(t.merge_head_groups));
    return Status::ok();
  }

  size_t workspace_bytes(const DsaProblem& p, const DsaTiling& t) const override {
    return v1::workspace_bytes(p.num_tokens, effective_splits(p, t));
  }

  std::string explain(const DsaProblem& p, const DsaTiling& t) const override {
    const int splits = effective_splits(p, t);
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "%s %s: split kernel grid %d x %d (tokens x splits of %d slots), %d threads, "
                  "%s shared memory, %d stage(s) of 64 rows; %s; workspace %s",
                  info().key.c_str(), t.name().c_str(), p.num_tokens, splits, split_len(p, t),
                  v1::kThreads, format_kb(v1::smem_bytes(t.stages)).c_str(), t.stages,
                  splits > 1 ? ("merge kernel grid " + std::to_string(p.num_tokens) + " x " +
                                std::to_string(t.merge_head_groups) + " (PDL)").c_str()
                             : "fused epilogue, no merge",
                  format_kb(workspace_bytes(p, t)).c_str());
    return buf;
  }

  Status launch(const DsaProblem& p, const DsaTiling& t, const DsaTensors& x, void* workspace,
                cudaStream_t stream) const override {
    const int splits = effective_splits(p, t);
    v1::Params a{};
    a.q_nope = x.q_nope;
    a.q_pe = x.q_pe;
    a.ckv = x.ckv_cache;
    a.kpe = x.kpe_cache;
    a.indices = x.sparse_indices;
    a.out = x.output;
    a.lse = x.lse;
    const size_t rows = size_t(p.num_tokens) * splits * v1::kHeads;
    a.part_o = static_cast<float*>(workspace);
    a.part_m = splits > 1 ? a.part_o + rows * v1::kDimV : nullptr;
    a.part_l = splits > 1 ? a.part_m + rows : nullptr;
    a.q_nope_stride_t = x.q_nope_stride_t;
    a.q_nope_stride_h = x.q_nope_stride_h;
    a.q_pe_stride_t = x.q_pe_stride_t;
    a.q_pe_stride_h = x.q_pe_stride_h;
    a.ckv_stride = x.ckv_stride_slot;
    a.kpe_stride = x.kpe_stride_slot;
    a.indices_stride = x.indices_stride_t;
    a.num_slots = p.num_slots();
    a.num_tokens = p.num_tokens;
    a.topk = p.topk;
    a.num_splits = splits;
    a.split_len = split_len(p, t);
    a.scale_log2 = float(double(x.sm_scale) * 1.4426950408889634);
    return cuda_status(v1::launch(a, t.stages, t.merge_head_groups, stream), info().key + " launch");
  }
};

}  // namespace

const DsaKernel& dsa_v1_splitk_kernel() {
  static const DsaV1SplitK kernel;
  return kernel;
}

}  // namespace mlakit
