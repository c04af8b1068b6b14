// Registry entry of dsa_decode.v2_fused.bf16: search space, default tiling, validation against
// problem and device, --explain, and the launch. Tiling fields (Tiling): num_splits = CTAs per
// row (the grid's x), block_n = least slots per split, stages = 32-row ring stages, m = 1 (the
// merge is in the kernel), p = producer warps, g = gather, w = MMA path, h = heads per CTA (16,
// 32, or 64: its own kernel, h64.cuh), b = pooled rows (T <= 8, h16 and h32: row_ring.h). Sizes
// come from traits.h and h64_traits.h; the register need from the compiled kernel when a GPU is
// present (launch.h).
#include "kernels/dsa_decode/v2_fused/entry.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <iterator>
#include <vector>

#include "base/cuda_status.h"
#include "base/format.h"
#include "kernels/common/resources.h"
#include "kernels/dsa_decode/common/ring_plan.h"
#include "kernels/dsa_decode/common/h64_host.h"
#include "kernels/dsa_decode/common/h64_traits.h"
#include "kernels/dsa_decode/v2_fused/launch.h"
#include "kernels/dsa_decode/v2_fused/tiling.h"
#include "kernels/dsa_decode/v2_fused/traits.h"

namespace mlakit::dsa_v2 {
namespace {

constexpr int kDefaultMinRows = 64;  // least slots per split: one 64-slot tile
// The only compiled h64 instance's pipe: four 32-slot stages, a producer warpgroup.
constexpr Pipe kH64Pipe{dsa_h64::kStages, dsa_h64::kProducers};
// The default takes h64 from this many T x heads (64 heads from T = 5, 128 from T = 3). Its output
// goes out in whole rows and its split rows merge in one walk, so there h64 with 16 CTAs per row
// beats h32 with 8 on long rows; it loses on short rows, by less than long rows gain. Up to
// kH16MaxTokenHeads the few rows run faster on h16. Chosen by measurement:
// docs/kernels/dsa_decode_v2_fused.md.
constexpr int kH64MinTokenHeads = 320;
// Up to this many T x heads the default keeps one consumer warpgroup per CTA (h16) at 32, 64 and
// 128 heads: the head groups then run side by side on more SMs (at so few rows, CTAs of more heads
// would leave SMs idle), the later ones reading the rows from L2. Chosen by measurement:
// docs/kernels/dsa_decode_v2_fused.md.
constexpr int kH16MaxTokenHeads = 256;
// No default pools rows (b1): the shapes where it won (128 heads at T = 5..8 with h32; 64 heads at
// T = 5..8 on GPUs of fewer SMs) all take h64, which has no pooled instance (pooling adds a
// prologue to every h64 CTA that the balance does not pay back). b1 stays a tuner choice.

// Consumer warpgroups per CTA: one per 16 heads of the tiling's h.
int wgs_of(const Tiling& t) { return t.cta_heads / kHeads; }

Instance instance_of(const Tiling& t) {
  return Instance{Pipe{t.stages, t.producers}, Gather(t.gather), Mma(t.mma), wgs_of(t), t.pool == 1};
}

// Registers per thread of an instance: the compiled kernel's when the facts are a live device's
// (read once per instance), else the need traits.h documents for its MMA path.
int registers_needed(const Tiling& t, const DeviceFacts& dev) {
  const int wgs = wgs_of(t);
  const auto documented = [&] {
    return wgs == kH64Blocks ? dsa_h64::kDocumentedRegisters : documented_registers(wgs, t.producers);
  };
  if (!dev.live) return documented();
  static std::array<std::atomic<int>, std::size(kPipeChoices) * 2 + std::size(kWidePipes) + 3> known{};
  size_t slot = 0;
  if (t.pool == 1) {
    slot = known.size() - 3 + size_t(wgs - 1);  // the two pooled instances
  } else if (wgs == kH64Blocks) {
    slot = known.size() - 1;
  } else if (wgs == 2) {
    while (kWidePipes[slot].stages != t.stages || kWidePipes[slot].producers != t.producers) ++slot;
    slot += std::size(kPipeChoices) * 2;
  } else {
    while (kPipeChoices[slot].stages != t.stages || kPipeChoices[slot].producers != t.producers) ++slot;
    slot = slot * 2 + size_t(t.gather);
  }
  if (int regs = known[slot].load(std::memory_order_relaxed); regs > 0) return regs;
  cudaFuncAttributes attr;
  if (kernel_attributes(instance_of(t), &attr) != cudaSuccess || attr.numRegs <= 0) {
    cudaGetLastError();  // no image for this device: not sticky, and the documented need holds
    return documented();
  }
  known[slot].store(attr.numRegs, std::memory_order_relaxed);
  return attr.numRegs;
}

// The compiled instance and what one CTA needs of an SM.
Status check_instance(const Tiling& t, const DeviceFacts& dev) {
  using dsa_ring::reject;
  if (t.merge_head_groups != 1) return reject(t, "v2_fused merges in the kernel: m must be 1; got " + std::to_string(t.merge_head_groups));
  if (t.cta_heads != 16 && t.cta_heads != 32 && t.cta_heads != dsa_h64::kCtaHeads)
    return reject(t, "h (heads per CTA) must be 16, 32 or 64; got " + std::to_string(t.cta_heads));
  if (t.cta_heads != dsa_h64::kCtaHeads) {
    if (t.gather != int(Gather::kHybrid) && t.gather != int(Gather::kBulk))
      return reject(t, "g (gather) must be 0 (bulk ckv + cp.async kpe) or 1 (bulk) with h16 and h32; got " +
                           std::to_string(t.gather));
    if (t.mma != int(Mma::kSync))
      return reject(t, "w (MMA path) must be 0 (mma.sync) with h16 and h32 (w1 is h64's); got " + std::to_string(t.mma));
  }
  if (t.pool != 0 && t.pool != 1) return reject(t, "b (pooled rows) must be 0 or 1; got " + std::to_string(t.pool));
  if (t.pool == 1 && !is_pooled_instance(instance_of(t)))
    return reject(t, "b1 (pooled rows) is compiled with x" + std::to_string(kPooledPipe.stages) + "p" +
                         std::to_string(kPooledPipe.producers) + ", g0 and w0, for h16 and h32 only");
  const int wgs = wgs_of(t);
  if (wgs == kH64Blocks) {
    if (!is_h64(instance_of(t)))
      return reject(t, "h64 (64 heads per CTA, wgmma) is compiled with x4p4, g2 (cp.async) and w1 (wgmma) only");
    return dsa_h64::check_fits(t, dev, registers_needed(t, dev));
  }
  if (wgs == 2 && (t.gather != int(Gather::kHybrid) || t.mma != int(Mma::kSync)))
    return reject(t, "h32 (two consumer warpgroups) is compiled with g0 (hybrid gather) and w0 (mma.sync) only");
  const std::vector<Pipe> compiled = wgs == 2 ? std::vector<Pipe>(std::begin(kWidePipes), std::end(kWidePipes))
                                              : std::vector<Pipe>(std::begin(kPipeChoices), std::end(kPipeChoices));
  if (std::none_of(compiled.begin(), compiled.end(),
                   [&](const Pipe& c) { return c.stages == t.stages && c.producers == t.producers; })) {
    std::string pipes;
    for (const Pipe& c : compiled) pipes += " x" + std::to_string(c.stages) + "p" + std::to_string(c.producers);
    return reject(t, "(stages, producers) = (" + std::to_string(t.stages) + ", " + std::to_string(t.producers) +
                         ") is not instantiated" + (wgs == 2 ? " with h32" : "") + "; compiled:" + pipes);
  }
  const size_t smem = smem_bytes(t.stages, wgs);
  if (smem > size_t(dev.smem_per_block_optin))
    return reject(t, "shared-memory plan " + format_kb(smem) + " (" + std::to_string(t.stages) + " stages x " +
                         std::to_string(kStageRows) + " rows x " + std::to_string(kKvPitch * 2) +
                         " B + Q + P + slots) exceeds the " + format_kb(size_t(dev.smem_per_block_optin)) +
                         " per-block limit of " + dev.describe());
  const std::string short_of =
      kernels::register_shortfall(dev, kConsumerThreads * wgs + 32 * t.producers, kCtasPerSm, registers_needed(t, dev));
  return short_of.empty() ? Status::ok() : reject(t, short_of);
}

// Pooled rows: every CTA copies all T index rows (and T x warps counts) into its ring before the
// first stage.
Status check_pool(const DsaProblem& p, const Tiling& t) {
  if (p.num_tokens > dsa_ring::kMaxPoolTokens)
    return dsa_ring::reject(t, "b1 (pooled rows) reads every row in every CTA: at most " +
                                   std::to_string(dsa_ring::kMaxPoolTokens) + " tokens; got T=" +
                                   std::to_string(p.num_tokens));
  const int warps = kConsumerWarps * wgs_of(t) + t.producers;
  const size_t need = size_t(dsa_ring::pooled_scratch_ints(p.num_tokens, p.topk, warps)) * sizeof(int32_t);
  const size_t ring = size_t(t.stages) * kStageBytes;
  if (need > ring)
    return dsa_ring::reject(t, "b1 (pooled rows) copies the T=" + std::to_string(p.num_tokens) + " index rows of topk=" +
                                   std::to_string(p.topk) + " (" + format_kb(need) + ") into the ring of " +
                                   format_kb(ring) + ", which is too small");
  return Status::ok();
}

// Whether `t` can run with pooled rows: the pooled kernel is compiled for its instance (x4p2, g0,
// w0, h16 or h32) and the T index rows fit its ring.
bool can_pool(const DsaProblem& p, Tiling t) {
  t.pool = 1;
  return is_pooled_instance(instance_of(t)) && check_pool(p, t).is_ok();
}

class V2Fused final : public VariantKernel<DsaProblem, Tiling> {
 public:
  const KernelInfo& info() const override {
    static const KernelInfo k{"dsa_decode.v2_fused.bf16", "dsa_decode", "v2_fused", "bf16", dsa_ring::head_counts(),
                              /*rank=*/2,
                              "one launch: per-row split on the GPU, producer warps filling a bulk-copy "
                              "ring, mma.sync (or wgmma) consumers, in-kernel merge",
                              ArchRequirement{9, 0, true}};
    return k;
  }

  // The tuner's choices: splits, least rows per split, every compiled pipe, the two bulk gathers.
  // With 32 heads or more, also two consumer warpgroups per CTA (h32) over its compiled pipes; with
  // 64 or more, also the wgmma kernel of 64 heads per CTA (h64).
  std::vector<Tiling> tilings(const DsaProblem& p) const override {
    std::vector<Tiling> out = dsa_ring::ring_search_space<Tiling>(kMaxSplits, {int(Gather::kHybrid), int(Gather::kBulk)});
    if (p.num_heads % 32 == 0)
      for (Tiling t : dsa_ring::ring_search_space<Tiling>(kMaxSplits, {int(Gather::kHybrid)},
                                                          {std::begin(kWidePipes), std::end(kWidePipes)})) {
        t.cta_heads = 32;
        out.push_back(t);
      }
    // Each of those with pooled rows too where a batch has rows to pool.
    if (p.num_tokens >= 2 && p.num_tokens <= dsa_ring::kMaxPoolTokens)
      for (size_t i = 0, n = out.size(); i < n; ++i)
        if (Tiling t = out[i]; can_pool(p, t)) {
          t.pool = 1;
          out.push_back(t);
        }
    if (p.num_heads % dsa_h64::kCtaHeads != 0) return out;
    for (Tiling t : dsa_ring::ring_search_space<Tiling>(kMaxSplits, {int(Gather::kCpAsync)}, {kH64Pipe})) {
      t.mma = int(Mma::kWgmma);
      t.cta_heads = dsa_h64::kCtaHeads;
      out.push_back(t);
    }
    return out;
  }

  // 32 heads from T x H > kH16MaxTokenHeads: two consumer warpgroups per CTA on each gathered tile
  // (h32), which gathers each row once for both instead of once per 16 heads; up to
  // T x H = kH16MaxTokenHeads one per CTA (h16), whose head groups spread over more SMs. From T x H
  // >= kH64MinTokenHeads at 64 or 128 heads: the wgmma kernel of 64 heads per CTA (h64).
  Tiling default_for(const DsaProblem& p, const DeviceFacts& dev) const override {
    if (p.num_heads % dsa_h64::kCtaHeads == 0 && p.num_tokens * p.num_heads >= kH64MinTokenHeads) {
      const int splits =
          dsa_ring::default_splits(p, dev, kMaxSplits, kDefaultMinRows, dsa_ring::head_groups(p, dsa_h64::kCtaHeads));
      Tiling t = dsa_ring::ring_tiling<Tiling>(splits, kDefaultMinRows, kH64Pipe, int(Gather::kCpAsync));
      t.mma = int(Mma::kWgmma);
      t.cta_heads = dsa_h64::kCtaHeads;
      return t;
    }
    const int cta_heads = p.num_heads % 32 == 0 && p.num_tokens * p.num_heads > kH16MaxTokenHeads ? 32 : kHeads;
    const Pipe pipe = cta_heads == kHeads ? kPairedPipe : kDefaultPipe;
    const int splits =
        dsa_ring::default_splits(p, dev, kMaxSplits, kDefaultMinRows, dsa_ring::head_groups(p, cta_heads));
    Tiling t = dsa_ring::ring_tiling<Tiling>(splits, kDefaultMinRows, pipe, int(Gather::kHybrid));
    t.cta_heads = cta_heads;
    return t;
  }

  Status validate(const DsaProblem& p, const Tiling& t, const DeviceFacts& dev) const override {
    MLAKIT_RETURN_IF_ERROR(dsa_ring::check_problem("v2_fused", p, kMaxTopk));
    MLAKIT_RETURN_IF_ERROR(check_instance(t, dev));
    if (p.num_heads % t.cta_heads != 0)
      return dsa_ring::reject(t, "h (heads per CTA) must divide num_heads=" + std::to_string(p.num_heads) + "; got " +
                                     std::to_string(t.cta_heads));
    MLAKIT_RETURN_IF_ERROR(dsa_ring::check_counted_blocks(p, t));
    if (t.pool == 1) MLAKIT_RETURN_IF_ERROR(check_pool(p, t));
    return dsa_ring::check_split(p, t, dev, kMaxSplits, /*co_resident=*/true, kCtasPerSm,
                                 dsa_ring::head_groups(p, t.cta_heads));
  }

  size_t workspace(const DsaProblem& p, const Tiling& t) const override {
    if (t.cta_heads == dsa_h64::kCtaHeads) return dsa_h64::workspace_layout(p, t.num_splits).bytes;
    return workspace_layout(dsa_ring::head_blocks(p), t.num_splits, t.pool == 1).bytes;
  }

  std::string describe(const DsaProblem& p, const Tiling& t) const override {
    const bool wide = t.cta_heads == dsa_h64::kCtaHeads;
    char split_note[160] = "";
    if (t.pool != 1 && t.num_splits > 1)
      std::snprintf(split_note, sizeof split_note,
                    ", cooperative: split rows merge in-kernel%s, rows of at most %d valid slots stay whole",
                    runs_merge_twin(instance_of(t), t.num_splits) ? " (the 2-4-split twin: one L2 round trip)" : "",
                    merging_whole_rows(t.block_n));
    char buf[768];
    std::snprintf(buf, sizeof buf,
                  "%s %s: one launch, grid %d x %d (CTAs per row x tokens%s%s), %d consumer + %d producer "
                  "warps, %s shared memory (%d stages of %d rows), %s gather, %s; workspace %s",
                  info().key.c_str(), t.name().c_str(), t.num_splits * dsa_ring::head_groups(p, t.cta_heads),
                  p.num_tokens, dsa_ring::heads_note(p, t.cta_heads).c_str(),
                  t.pool == 1 ? ", cooperative: rows pooled over the whole grid, split rows merge in-kernel" : split_note,
                  kConsumerWarps * wgs_of(t),
                  t.producers, format_kb(wide ? dsa_h64::kSmemBytes : smem_bytes(t.stages, wgs_of(t))).c_str(), t.stages,
                  kStageRows,
                  t.gather == 0 ? "bulk ckv + cp.async kpe"
                  : t.gather == 1 ? "bulk"
                  : wide          ? "cp.async into the 128-byte swizzle"
                                  : "cp.async",
                  t.mma == 0 ? "mma.sync m16n8k16"
                  : wide     ? "wgmma m64n32k16 (S) + m64n256k16 (O), 64 heads = M"
                             : "wgmma m64n16k16",
                  format_kb(workspace(p, t)).c_str());
    return buf;
  }

  Status run(const DsaProblem& p, const Tiling& t, const DsaTensors& x, void* workspace,
             cudaStream_t stream) const override {
    Params a = dsa_ring::ring_params<Params>(p, t, x);
    a.scale_log2 = float(double(x.sm_scale) * 1.4426950408889634);
    a.head_groups = dsa_ring::head_groups(p, t.cta_heads);
    if (t.cta_heads == dsa_h64::kCtaHeads) {
      dsa_h64::point_into(a, dsa_h64::workspace_layout(p, t.num_splits), workspace);
      return cuda_status(dsa_v2::launch(a, instance_of(t), stream), info().key + " launch");
    }
    auto* base = static_cast<char*>(workspace);
    const WorkspaceLayout w = workspace_layout(dsa_ring::head_blocks(p), t.num_splits, t.pool == 1);
    if (w.bytes > 0) {
      a.counters = x.counters != nullptr ? x.counters : reinterpret_cast<uint32_t*>(base + w.counters);
      a.part_ml = reinterpret_cast<float2*>(base + w.part_ml);
      a.part_o = reinterpret_cast<float*>(base + w.part_o);
    }
    return cuda_status(dsa_v2::launch(a, instance_of(t), stream), info().key + " launch");
  }
};

}  // namespace

const DsaKernel& entry() {
  static const V2Fused kernel;
  return kernel;
}

}  // namespace mlakit::dsa_v2
