// Registry entries of dsa_decode.v2_fp8.fp8 (the FP8-cache decode) and dsa_decode.floor_fp8.fp8
// (its gather floor: the same kernel with Work::kStreamOnly). Tiling fields (Tiling) as
// v2_fused's: num_splits = CTAs per row, block_n = least slots per split, stages = 32-row raw ring
// stages, p = producer warps (4: one warpgroup); m = 1 (in-kernel merge), g = 1 (one bulk copy
// per 656-byte row), w = 0 (mma.sync); c = 1: a split row merges inside a thread-block cluster of
// its CTAs (2..8 splits, no workspace), c = 0 through global memory. h = 64 (64 heads per CTA, the
// decode only): v2_fused's h64 consumers (wgmma) behind a producer warpgroup that dequantizes the
// rows into their bf16 stages (h64.cuh): x4p4, g3 (16-byte loads into registers), w1.
#include "kernels/dsa_decode/v2_fp8/entry.h"

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
#include "kernels/dsa_decode/v2_fp8/launch.h"
#include "kernels/dsa_decode/v2_fp8/tiling.h"
#include "kernels/dsa_decode/v2_fp8/traits.h"
#include "kernels/dsa_decode/common/h64_host.h"
#include "kernels/dsa_decode/common/h64_traits.h"

namespace mlakit::dsa_v2_fp8 {
namespace {

constexpr int kDefaultMinRows = 64;  // one 64-slot tile
constexpr int kBulkGather = int(Gather::kBulk);
// The 64-head kernel's only instance: v2_fused h64's ring (four 32-slot stages, a producer
// warpgroup), loads into registers, wgmma.
constexpr int kH64Heads = dsa_h64::kCtaHeads;
constexpr Pipe kH64Pipe{dsa_h64::kStages, dsa_h64::kProducers};
constexpr int kH64Gather = int(Gather::kLdg);
// The default takes h64 from this many T x heads at 64 heads (T = 16; 128 heads: below). Against
// 16 heads per CTA, h64 is faster at every serving T, and the contest's T = 6..8 rows are slower
// with it: the producers' first stage and Q's 72 KB sit on a short row's path. So a batch of short
// rows loses about the same at any T, while long rows gain more the larger T x H; this bound is
// where the gain wins. Chosen by measurement: docs/kernels/dsa_decode_v2_fp8.md.
constexpr int kH64MinTokenHeads = 1024;
// At 128 heads from T = 6: there the contest's long rows gain more with h64 than its short rows
// lose. 64 heads keep 1024 (their T = 6-8 rows are slower with h64). Chosen by measurement:
// docs/kernels/dsa_decode_v2_fp8.md.
constexpr int kH64MinTokenHeads128 = 768;
constexpr int h64_min_token_heads(int heads) { return heads >= 128 ? kH64MinTokenHeads128 : kH64MinTokenHeads; }

bool is_h64(const Tiling& t) { return t.cta_heads == kH64Heads; }
Tiling h64_tiling(int splits, int min_rows) {
  Tiling t = dsa_ring::ring_tiling<Tiling>(splits, min_rows, kH64Pipe, kH64Gather);
  t.mma = int(dsa_split::Mma::kWgmma);
  t.cta_heads = kH64Heads;
  return t;
}

// Registers per thread of an instance: the compiled kernel's on a live device (read once per
// instance), else the documented need.
int registers_needed(const Tiling& t, Work work, const DeviceFacts& dev) {
  const int documented = is_h64(t) ? dsa_h64::kDocumentedRegisters : kDocumentedRegisters;
  if (!dev.live) return documented;
  static std::array<std::atomic<int>, std::size(kFp8Pipes) * 4 + 1> known{};
  size_t slot = 0;
  if (is_h64(t)) {
    slot = known.size() - 1;
  } else {
    while (kFp8Pipes[slot].stages != t.stages || kFp8Pipes[slot].producers != t.producers) ++slot;
    slot = (slot * 2 + size_t(work)) * 2 + size_t(t.cluster);
  }
  if (int regs = known[slot].load(std::memory_order_relaxed); regs > 0) return regs;
  cudaFuncAttributes attr;
  const Instance instance{Pipe{t.stages, t.producers}, work, t.cluster == 1};
  const cudaError_t e = is_h64(t) ? kernel_attributes_h64(&attr) : kernel_attributes(instance, &attr);
  if (e != cudaSuccess || attr.numRegs <= 0) {
    cudaGetLastError();  // no image for this device: not sticky, and the documented need holds
    return documented;
  }
  known[slot].store(attr.numRegs, std::memory_order_relaxed);
  return attr.numRegs;
}

std::string compiled_pipes() {
  std::string pipes;
  for (const Pipe& c : kFp8Pipes) pipes += " x" + std::to_string(c.stages) + "p" + std::to_string(c.producers);
  return pipes;
}

Status check_instance(const Tiling& t, Work work, const DeviceFacts& dev) {
  using dsa_ring::reject;
  if (t.merge_head_groups != 1) return reject(t, "v2_fp8 merges in the kernel: m must be 1; got " + std::to_string(t.merge_head_groups));
  if (is_h64(t)) {
    if (work != Work::kDecode) return reject(t, "h must be 16 for the gather floor: it moves each row once");
    if (t.stages != kH64Pipe.stages || t.producers != kH64Pipe.producers || t.gather != kH64Gather ||
        t.mma != int(dsa_split::Mma::kWgmma) || t.cluster != 0)
      return reject(t, "h64 (64 heads per CTA, wgmma) is compiled with x4p4, g3 (loads into registers), w1 (wgmma) "
                       "and c0 only");
    return dsa_h64::check_fits(t, dev, registers_needed(t, work, dev));
  }
  if (t.gather != kBulkGather)
    return reject(t, "g (gather) must be 1: each 656-byte row is one bulk copy; got " + std::to_string(t.gather));
  if (t.mma != int(dsa_split::Mma::kSync)) return reject(t, "w (MMA path) must be 0 (mma.sync); got " + std::to_string(t.mma));
  if (t.cta_heads != 16) return reject(t, "h (heads per CTA) must be 16 or 64; got " + std::to_string(t.cta_heads));
  if (t.cluster != 0 && t.cluster != 1)
    return reject(t, "c (cluster merge) must be 0 (global memory) or 1 (cluster); got " + std::to_string(t.cluster));
  if (t.cluster == 1 && work != Work::kDecode) return reject(t, "c must be 0 for the gather floor: it merges nothing");
  if (!is_fp8_pipe(Pipe{t.stages, t.producers}))
    return reject(t, "(stages, producers) = (" + std::to_string(t.stages) + ", " + std::to_string(t.producers) +
                         ") is not instantiated; compiled:" + compiled_pipes());
  const size_t smem = smem_bytes(t.stages);
  if (smem > size_t(dev.smem_per_block_optin))
    return reject(t, "shared-memory plan " + format_kb(smem) + " (" + std::to_string(t.stages) +
                         " raw stages + Q + P + slots) exceeds the " +
                         format_kb(size_t(dev.smem_per_block_optin)) + " per-block limit of " + dev.describe());
  const std::string short_of = kernels::register_shortfall(dev, kWgs * kConsumerThreads + 32 * t.producers, kCtasPerSm,
                                                           registers_needed(t, work, dev));
  return short_of.empty() ? Status::ok() : reject(t, short_of);
}

// Both entries: the decode (kDecode) and the floor (kStreamOnly) differ in their info, their
// workspace (the floor merges nothing) and the kernel they launch.
class V2Fp8 final : public VariantKernel<DsaProblem, Tiling> {
 public:
  explicit V2Fp8(Work work) : work_(work) {}

  const KernelInfo& info() const override {
    static const KernelInfo decode{"dsa_decode.v2_fp8.fp8", "dsa_decode", "v2_fp8", "fp8", dsa_ring::head_counts(),
                                   /*rank=*/2,
                                   "v2_fused over the FP8 cache: one bulk copy per 656-byte row, consumers "
                                   "read E4M3 bytes into MMA fragments (QK and PV in f16), in-kernel merge",
                                   ArchRequirement{9, 0, true}};
    static const KernelInfo floor{"dsa_decode.floor_fp8.fp8", "dsa_decode", "floor_fp8", "fp8", dsa_ring::head_counts(),
                                  /*rank=*/0,
                                  "gather floor of the FP8 cache: v2_fp8's rows into its ring, no math, no output",
                                  ArchRequirement{9, 0, true}, /*floor=*/true};
    return work_ == Work::kDecode ? decode : floor;
  }

  // v2_fused's space, and for the decode every split count of 2..8 also with the cluster merge;
  // at 64 or 128 heads also the 64-head kernel at every split count.
  std::vector<Tiling> tilings(const DsaProblem& p) const override {
    std::vector<Tiling> out = dsa_ring::ring_search_space<Tiling>(dsa_split::kMaxSplits, {kBulkGather},
                                                                  {std::begin(kFp8Pipes), std::end(kFp8Pipes)});
    if (work_ != Work::kDecode) return out;
    const size_t n = out.size();
    for (size_t i = 0; i < n; ++i)
      if (out[i].num_splits > 1 && out[i].num_splits <= kMaxClusterSplits) {
        out.push_back(out[i]);
        out.back().cluster = 1;
      }
    if (p.num_heads % kH64Heads == 0)
      for (const Tiling& t : dsa_ring::ring_search_space<Tiling>(dsa_split::kMaxSplits, {kH64Gather}, {kH64Pipe}))
        out.push_back(h64_tiling(t.num_splits, t.block_n));
    return out;
  }

  // The split count v2_fused would take, merged through global memory: the cluster merge lost at
  // every size where it was measured (clusters of big CTAs fragment the GPCs:
  // docs/knowledge/rings-and-l2.md); the tuner may still choose it.
  // At 64 or 128 heads from T x H >= h64_min_token_heads: the 64-head kernel (wgmma).
  Tiling default_for(const DsaProblem& p, const DeviceFacts& dev) const override {
    if (work_ == Work::kDecode && p.num_heads % kH64Heads == 0 &&
        p.num_tokens * p.num_heads >= h64_min_token_heads(p.num_heads))
      return h64_tiling(dsa_ring::default_splits(p, dev, dsa_split::kMaxSplits, kDefaultMinRows,
                                                 dsa_ring::head_groups(p, kH64Heads)),
                        kDefaultMinRows);
    return dsa_ring::ring_tiling<Tiling>(
        dsa_ring::default_splits(p, dev, dsa_split::kMaxSplits, kDefaultMinRows, groups(p)), kDefaultMinRows,
        kFp8DefaultPipe, kBulkGather);
  }

  Status validate(const DsaProblem& p, const Tiling& t, const DeviceFacts& dev) const override {
    MLAKIT_RETURN_IF_ERROR(dsa_ring::check_problem(info().variant, p, kMaxTopk));
    MLAKIT_RETURN_IF_ERROR(check_instance(t, work_, dev));
    if (p.num_heads % t.cta_heads != 0)
      return dsa_ring::reject(t, "h (heads per CTA) must divide num_heads=" + std::to_string(p.num_heads) + "; got " +
                                     std::to_string(t.cta_heads));
    if (t.cluster == 1 && (t.num_splits < 2 || t.num_splits > kMaxClusterSplits))
      return dsa_ring::reject(t, "c = 1 makes a row's " + std::to_string(t.num_splits) +
                                     " CTAs one thread-block cluster: 2.." + std::to_string(kMaxClusterSplits) +
                                     " splits (the portable cluster size)");
    // Merges through global memory wait at counters: every CTA of the grid co-resident. A cluster is
    // scheduled whole, and clusters never wait for each other.
    const bool global_merge = work_ == Work::kDecode && t.num_splits > 1 && t.cluster == 0;
    if (global_merge) MLAKIT_RETURN_IF_ERROR(dsa_ring::check_counted_blocks(p, t));
    return dsa_ring::check_split(p, t, dev, dsa_split::kMaxSplits, /*co_resident=*/global_merge, kCtasPerSm,
                                 groups(p, t));
  }

  size_t workspace(const DsaProblem& p, const Tiling& t) const override {
    if (is_h64(t)) return dsa_h64::workspace_layout(p, t.num_splits).bytes;  // v2_fused's h64 layout
    return work_ == Work::kDecode && t.cluster == 0
               ? dsa_split::workspace_layout(dsa_ring::head_blocks(p), t.num_splits).bytes
               : 0;
  }

  std::string describe(const DsaProblem& p, const Tiling& t) const override {
    char buf[512];
    if (is_h64(t)) {
      std::snprintf(buf, sizeof buf,
                    "%s %s: one launch, grid %d x %d (CTAs per row x tokens%s%s), 8 consumer warps (wgmma m64n32k16 "
                    "(S) + m64n256k16 (O), 64 heads = M) + 4 producer warps (16-byte loads of the 656-byte rows, "
                    "dequantized into bf16 stages in the 128-byte swizzle), %s shared memory (4 stages of 32 "
                    "rows); workspace %s",
                    info().key.c_str(), t.name().c_str(), t.num_splits * groups(p, t), p.num_tokens,
                    dsa_ring::heads_note(p, kH64Heads).c_str(),
                    t.num_splits > 1 ? ", cooperative: split rows merge in-kernel through global memory" : "",
                    format_kb(dsa_h64::kSmemBytes).c_str(), format_kb(workspace(p, t)).c_str());
      return buf;
    }
    std::snprintf(buf, sizeof buf,
                  "%s %s: one launch, grid %d x %d (CTAs per row x tokens%s%s), %d consumer warps (two warpgroups "
                  "on alternate tiles of the same heads) + %d producer warps, "
                  "%s shared memory (%d raw stages of %d x 656-byte rows), one bulk copy "
                  "per row, %s; workspace %s",
                  info().key.c_str(), t.name().c_str(), t.num_splits * groups(p, t), p.num_tokens,
                  work_ == Work::kDecode ? dsa_ring::heads_note(p).c_str() : "",
                  t.num_splits <= 1 || work_ != Work::kDecode ? ""
                  : t.cluster == 1 ? ", clusters of a row's CTAs: split rows merge through distributed shared memory"
                                   : ", cooperative: split rows merge in-kernel through global memory",
                  kWgs * kConsumerWarps, t.producers, format_kb(smem_bytes(t.stages)).c_str(), t.stages, kStageRows,
                  work_ == Work::kDecode ? "E4M3 bytes into mma.sync m16n8k16 fragments" : "no math (floor)",
                  format_kb(workspace(p, t)).c_str());
    return buf;
  }

  Status run(const DsaProblem& p, const Tiling& t, const DsaTensors& x, void* workspace,
             cudaStream_t stream) const override {
    Params a{dsa_ring::ring_params<dsa_split::Params>(p, t, x), p.page_size, page_shift_of(p.page_size)};
    a.scale_log2 = float(double(x.sm_scale) * 1.4426950408889634);
    a.head_groups = groups(p, t);
    if (is_h64(t)) {
      dsa_h64::point_into(a, dsa_h64::workspace_layout(p, t.num_splits), workspace);
      return cuda_status(launch_h64(a, stream), info().key + " launch");
    }
    auto* base = static_cast<char*>(workspace);
    const dsa_split::WorkspaceLayout w = dsa_split::workspace_layout(dsa_ring::head_blocks(p), t.num_splits);
    if (work_ == Work::kDecode && t.cluster == 0 && w.bytes > 0) {  // a cluster merges in shared memory
      a.counters = x.counters != nullptr ? x.counters : reinterpret_cast<uint32_t*>(base + w.counters);
      a.part_ml = reinterpret_cast<float2*>(base + w.part_ml);
      a.part_o = reinterpret_cast<float*>(base + w.part_o);
    }
    return cuda_status(dsa_v2_fp8::launch(a, Instance{Pipe{t.stages, t.producers}, work_, t.cluster == 1}, stream),
                       info().key + " launch");
  }

 private:
  // CTAs per (row, split): one per 16 heads (or 64 with h64) for the decode; the floor moves each
  // row once.
  int groups(const DsaProblem& p, const Tiling& t) const { return groups(p, t.cta_heads); }
  int groups(const DsaProblem& p, int cta_heads = dsa_ring::kCtaHeads) const {
    return work_ == Work::kDecode ? dsa_ring::head_groups(p, cta_heads) : 1;
  }

  Work work_;
};

}  // namespace

const DsaKernel& entry() {
  static const V2Fp8 kernel(Work::kDecode);
  return kernel;
}

const DsaKernel& floor_entry() {
  static const V2Fp8 kernel(Work::kStreamOnly);
  return kernel;
}

}  // namespace mlakit::dsa_v2_fp8
