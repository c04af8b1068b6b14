// Registry entry of mla_decode.v1_paged.bf16: search space, default tiling, validation against
// problem and device, --explain, and the launch. Tiling fields (Tiling): c = CTAs of the
// persistent grid, x = 32-row ring stages, p = producer warps, g = gather (bulk copies for 16 query
// rows per CTA, 16-byte cp.async into the swizzle for 64), m = query rows per CTA (16: mma.sync
// per 16-head block and position; 64: wgmma over 64 of a request's s_q x heads rows, m64.cuh),
// w = units a range may grow by to keep requests whole (schedule.cuh), o = m64's consumer pair
// (0 lockstep, 1 seesaw; kernels/common/wgmma_rows64.cuh).
// Sizes come from traits.h; the register need from the compiled kernel when a GPU is present.
#include "kernels/mla_decode/v1_paged/entry.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <iterator>
#include <vector>

#include "base/cuda_status.h"
#include "base/format.h"
#include "kernels/common/resources.h"
#include "kernels/mla_decode/v1_paged/launch.h"
#include "kernels/mla_decode/v1_paged/m64_traits.h"
#include "kernels/mla_decode/v1_paged/tiling.h"
#include "kernels/mla_decode/v1_paged/traits.h"

namespace mlakit::mla_v1 {
namespace {

Status reject(const Tiling& t, const std::string& why) {
  return Status::invalid_argument("tiling " + t.name() + ": " + why);
}

// Query rows per CTA of the 64-row path (m64) and the smallest s_q x heads the default gives it:
// from 64 rows a request's rows stream once per 64 instead of once per 16; from 32 where the
// stages come by tensor-map boxes (pages of a multiple of 32 rows), with which half-empty 64-row
// tiles beat two 16-row groups (docs/kernels/mla_decode_v1_paged.md; docs/knowledge/copies.md).
constexpr int kWideRows = m64::kRows;
constexpr int kWideFromRows = 64;
constexpr int kWideFromRowsWithMaps = 32;
// The m64 consumer pair's default schedule: the seesaw (tiling field o1). Each warpgroup computes S
// of its own tile and frees its first tile slot mid-pair, so the ring refills under the math; the
// lockstep pair was faster on no workload measured (docs/knowledge/rings-and-l2.md).
constexpr int kSeesaw = 1;

bool wide(const Tiling& t) { return t.rows == kWideRows; }


// m64's gather 3: whole 32-row stages by tensor-map boxes (one 64-dim x 32-row box per block), for
// pages of a multiple of 32 rows; stages cut short by a piece's end, and every stage of other page
// sizes or of a cache the driver cannot map, take gather 2's 16-byte cp.async.
constexpr int kTensorMapGather = 3;
bool stage_maps_apply(const MlaProblem& p) { return p.page_size % kStageRows == 0; }

// The ckv and kpe tensor maps of `x` into `a`; false when they do not apply or cannot be encoded.
bool encode_stage_maps(const MlaProblem& p, const MlaTensors& x, Params* a) {
  if (!stage_maps_apply(p)) return false;
  const kernels::PagedRows ckv{x.ckv_cache, kDimV, p.page_size, p.num_pages, x.ckv_stride_row, x.ckv_stride_page,
                               64, kStageRows};
  const kernels::PagedRows kpe{x.kpe_cache, kDimR, p.page_size, p.num_pages, x.kpe_stride_row, x.kpe_stride_page,
                               64, kStageRows};
  return kernels::encode_paged_rows(ckv, &a->ckv_map) && kernels::encode_paged_rows(kpe, &a->kpe_map);
}
int groups_of(const MlaProblem& p, const Tiling& t) {
  return wide(t) ? m64::groups_of(p.seq_q, p.num_heads) : p.seq_q * (p.num_heads / kHeadBlock);
}
// The tiling's CTAs per group, but no more than a group can have units (every request at the
// block table's length): the rest could only compute the schedule and leave
// (docs/knowledge/splits-and-merges.md). The cut is the same either way: it takes
// min(CTAs, units) ranges.
int ctas_per_group_of(const MlaProblem& p, const Tiling& t) {
  const int64_t most_units = int64_t(p.batch) * ((p.max_seqlen() + kUnitRows - 1) / kUnitRows + kRequestCost);
  return int(std::min<int64_t>(t.ctas / groups_of(p, t), std::max<int64_t>(most_units, 1)));
}
int threads_of(const Tiling& t) { return wide(t) ? m64::kThreads : kConsumerThreads + 32 * t.producers; }
size_t smem_of(const Tiling& t) { return wide(t) ? m64::kSmemBytes : smem_bytes(t.stages); }

// Registers per thread of a pipe: the compiled kernel's on a live device (read once per pipe;
// the attention kernel's, which bounds the floor's), else the documented need.
int registers_needed(const Tiling& t, const DeviceFacts& dev) {
  if (wide(t)) {
    if (!dev.live) return m64::kDocumentedRegisters;
    static std::atomic<int> known_wide{0};
    if (int regs = known_wide.load(std::memory_order_relaxed); regs > 0) return regs;
    cudaFuncAttributes attr;
    if (kernel_attributes_m64(Work::kAttention, &attr) != cudaSuccess || attr.numRegs <= 0) {
      cudaGetLastError();
      return m64::kDocumentedRegisters;
    }
    known_wide.store(attr.numRegs, std::memory_order_relaxed);
    return attr.numRegs;
  }
  if (!dev.live) return kDocumentedRegisters;
  static std::array<std::atomic<int>, std::size(kPipes)> known{};
  size_t slot = 0;
  while (kPipes[slot].stages != t.stages || kPipes[slot].producers != t.producers) ++slot;
  if (int regs = known[slot].load(std::memory_order_relaxed); regs > 0) return regs;
  cudaFuncAttributes attr;
  if (kernel_attributes(Pipe{t.stages, t.producers}, Work::kAttention, &attr) != cudaSuccess || attr.numRegs <= 0) {
    cudaGetLastError();  // no image for this device: not sticky, and the documented need holds
    return kDocumentedRegisters;
  }
  known[slot].store(attr.numRegs, std::memory_order_relaxed);
  return attr.numRegs;
}

Status check_problem(const MlaProblem& p) {
  if (p.head_dim_ckv != kDimV || p.head_dim_kpe != kDimR)
    return Status::unsupported("v1_paged: head dims must be ckv 512 + kpe 64; got " + std::to_string(p.head_dim_ckv) +
                               " + " + std::to_string(p.head_dim_kpe));
  if (p.num_heads % kHeadBlock != 0 || p.num_heads < kHeadBlock || p.num_heads > kMaxHeads)
    return Status::unsupported("v1_paged runs 16, 32, 64 or 128 query heads; got num_heads=" +
                               std::to_string(p.num_heads) +
                               " (pad q with zero heads to the next: mlakit.compat.flash_mla_with_kvcache does)");
  if (p.seq_q < 1 || p.seq_q > kMaxSeqQ)
    return Status::unsupported("v1_paged: seq_q must be in [1, " + std::to_string(kMaxSeqQ) + "]; got " +
                               std::to_string(p.seq_q));
  return Status::ok();
}

Status check_tiling(const MlaProblem& p, const Tiling& t, const DeviceFacts& dev) {
  if (wide(t)) {
    if (t.stages != m64::kStages || t.producers != m64::kProducers || (t.gather != 2 && t.gather != 3))
      return reject(t, "m64 (64 query rows per CTA) runs " + std::to_string(m64::kStages) +
                           " stages, a producer warpgroup and 16-byte cp.async (g2) or tensor-map boxes (g3) into "
                           "the swizzle: x" + std::to_string(m64::kStages) + "p" + std::to_string(m64::kProducers) +
                           "g2 or g3");
  } else if (t.gather != 1) {
    return reject(t, "g (gather) must be 1 with 16 query rows per CTA: cp.async.bulk only");
  } else if (!is_compiled(Pipe{t.stages, t.producers})) {
    std::string pipes;
    for (const Pipe& c : kPipes) pipes += " x" + std::to_string(c.stages) + "p" + std::to_string(c.producers);
    return reject(t, "(stages, producers) = (" + std::to_string(t.stages) + ", " + std::to_string(t.producers) +
                         ") is not compiled; compiled:" + pipes);
  }
  if (t.whole < 0) return reject(t, "w (units to keep requests whole) must be >= 0");
  if (t.order != 0 && (t.order != 1 || !wide(t)))
    return reject(t, "o (the consumer pair's schedule) must be 0, or 1 (seesaw) with m64");
  const int resident = std::min(kMaxCtas, dev.num_sms * kCtasPerSm);
  const int groups = groups_of(p, t);
  if (t.ctas < groups || t.ctas > resident)
    return reject(t, "c (CTAs) must be in [" + std::to_string(groups) + ", " + std::to_string(resident) +
                         "]: at least one per group of query rows (" +
                         (wide(t) ? "64 of s_q x heads" : "query position, 16-head block") +
                         "), and all co-resident on " + dev.describe() +
                         " (the CTAs of a split request wait for each other)");
  const size_t smem = smem_of(t);
  if (smem > size_t(dev.smem_per_block_optin))
    return reject(t, "shared-memory plan " + format_kb(smem) + " exceeds the " +
                         format_kb(size_t(dev.smem_per_block_optin)) + " per-block limit of " + dev.describe());
  const std::string short_of = kernels::register_shortfall(dev, threads_of(t), kCtasPerSm, registers_needed(t, dev));
  return short_of.empty() ? Status::ok() : reject(t, short_of);
}

// kWork = kAttention: mla_decode.v1_paged.bf16; kStreamOnly: the op's gather floor,
// mla_decode.floor_stream.bf16 (the same schedule, ring and hand-offs, no math, no output).
template <Work kWork>
class V1Paged final : public VariantKernel<MlaProblem, Tiling> {
 public:
  const KernelInfo& info() const override {
    static const KernelInfo attention{"mla_decode.v1_paged.bf16", "mla_decode", "v1_paged", "bf16",
                                      {std::begin(kMlaHeadCounts), std::end(kMlaHeadCounts)}, /*rank=*/1,
                                      "one persistent launch: balanced split-KV from cache_seqlens on the GPU, "
                                      "page rows into a ring, 16-row mma.sync or 64-row wgmma consumers (m64), in-kernel merge",
                                      ArchRequirement{9, 0, true}};
    static const KernelInfo floor{"mla_decode.floor_stream.bf16", "mla_decode", "floor_stream", "bf16",
                                  {std::begin(kMlaHeadCounts), std::end(kMlaHeadCounts)}, /*rank=*/0,
                                  "gather floor: v1_paged's schedule and row ring, no math, no output",
                                  ArchRequirement{9, 0, true}, /*floor=*/true};
    return kWork == Work::kAttention ? attention : floor;
  }

  // Grids of the common Hopper SM counts (validation drops those a device cannot hold), every
  // compiled pipe of 16 query rows per CTA and the 64-row path.
  std::vector<Tiling> tilings(const MlaProblem&) const override {
    std::vector<Tiling> out;
    for (int ctas : {132, 128, 114, 96, 66}) {
      for (const Pipe& pipe : kPipes) out.push_back(Tiling{ctas, pipe.stages, pipe.producers, 1});
      for (int order : {kSeesaw, 0}) {
        out.push_back(wide_tiling(ctas, 2, order));
        out.push_back(wide_tiling(ctas, kTensorMapGather, order));
      }
    }
    return out;
  }

  // The 64-row path's only pipe: 4 stages, a producer warpgroup; 16-byte cp.async (gather 2) or
  // tensor-map boxes (gather 3); the seesaw consumer pair unless `order` says lockstep.
  static Tiling wide_tiling(int ctas, int gather = 2, int order = kSeesaw) {
    Tiling t{ctas, m64::kStages, m64::kProducers, gather, kWideRows};
    t.order = order;
    return t;
  }

  // One CTA per SM; 64 query rows per CTA (tensor-map stages where the pages allow them) from
  // kWideFromRows query rows per request, or kWideFromRowsWithMaps with tensor-map stages.
  Tiling default_for(const MlaProblem& p, const DeviceFacts& dev) const override {
    const int ctas = std::min(kMaxCtas, dev.num_sms * kCtasPerSm);
    const int rows = p.seq_q * p.num_heads;
    const bool maps = stage_maps_apply(p);
    if (rows >= kWideFromRows || (maps && rows >= kWideFromRowsWithMaps))
      return wide_tiling(ctas, maps ? kTensorMapGather : 2);
    return Tiling{ctas, kDefaultPipe.stages, kDefaultPipe.producers, 1};
  }

  Status validate(const MlaProblem& p, const Tiling& t, const DeviceFacts& dev) const override {
    MLAKIT_RETURN_IF_ERROR(check_problem(p));
    return check_tiling(p, t, dev);
  }

  size_t workspace(const MlaProblem&, const Tiling& t) const override {
    return workspace_layout(t.ctas, t.rows).bytes;
  }

  std::string describe(const MlaProblem& p, const Tiling& t) const override {
    const int groups = groups_of(p, t);
    char buf[1024];
    if (wide(t)) {
      std::snprintf(buf, sizeof buf,
                    "%s %s: one cooperative launch, grid %d x %d (CTAs per group x groups of 64 of the s_q %d x "
                    "%d heads query rows), each group's requests cut into equal ranges of 64-row units on the "
                    "GPU (or kept whole, or with 2 to CTAs per group / 2 requests each cut into its own equal "
                    "pieces, where no range grows by more than %d units); 2 consumer warpgroups "
                    "(%s, 64 query rows = M) + 1 producer warpgroup, %s shared memory (Q, P, %d stages of %d rows in the 128-byte swizzle%s), %s; "
                    "workspace %s",
                    info().key.c_str(), t.name().c_str(), ctas_per_group_of(p, t), groups, p.seq_q, p.num_heads,
                    t.whole,
                    t.order == 1 ? "seesaw: each S of its own 64-row tile of a pair, wgmma m64n64k16 / m64n256k16"
                                 : "lockstep: S halves of one tile, wgmma m64n32k16 / m64n256k16",
                    format_kb(m64::kSmemBytes).c_str(), m64::kStages, kStageRows,
                    t.order == 1 ? ", two per 64-row tile, a piece in whole pairs of tiles" : "",
                    t.gather != kTensorMapGather ? "16-byte cp.async gather"
                    : stage_maps_apply(p)         ? "tensor-map boxes per whole stage, 16-byte cp.async for a cut one"
                                                  : "16-byte cp.async gather (tensor maps need pages of a multiple of 32 rows)",
                    format_kb(workspace(p, t)).c_str());
      return buf;
    }
    std::snprintf(buf, sizeof buf,
                  "%s %s: one cooperative launch, grid %d x %d (CTAs per group x groups = s_q %d x %d head "
                  "blocks of 16), each group's requests cut into equal ranges of 64-row units on the GPU (or "
                  "kept whole, or each cut into its own equal pieces, one request per CTA, where no range grows "
                  "by more than %d units); %d consumer + %d producer warps, %s shared memory (%d stages of %d "
                  "rows), bulk-copy gather, mma.sync m16n8k16; workspace %s",
                  info().key.c_str(), t.name().c_str(), ctas_per_group_of(p, t), groups, p.seq_q, p.num_heads / kHeadBlock,
                  t.whole, kConsumerWarps, t.producers, format_kb(smem_bytes(t.stages)).c_str(), t.stages, kStageRows,
                  format_kb(workspace(p, t)).c_str());
    return buf;
  }

  Status run(const MlaProblem& p, const Tiling& t, const MlaTensors& x, void* workspace,
             cudaStream_t stream) const override {
    Params a{};
    a.io = x;
    a.batch = p.batch;
    a.seq_q = p.seq_q;
    a.heads = p.num_heads;
    a.causal = p.causal;
    a.page_size = p.page_size;
    a.num_pages = p.num_pages;
    a.max_seqlen = p.max_seqlen();
    a.groups = groups_of(p, t);
    a.ctas_per_group = ctas_per_group_of(p, t);
    a.fused_rows = static_cast<const uint16_t*>(x.kpe_cache) == static_cast<const uint16_t*>(x.ckv_cache) + kDimV &&
                   x.kpe_stride_page == x.ckv_stride_page && x.kpe_stride_row == x.ckv_stride_row;
    a.scale_log2 = float(double(x.sm_scale) * 1.4426950408889634);
    const WorkspaceLayout w = workspace_layout(t.ctas, t.rows);
    auto* base = static_cast<char*>(workspace);
    a.counters = x.counters != nullptr ? x.counters : reinterpret_cast<uint32_t*>(base + w.counters);
    a.whole = t.whole;
    a.seesaw = t.order;
    a.part_ml = reinterpret_cast<float2*>(base + w.part_ml);
    a.part_o = reinterpret_cast<uint16_t*>(base + w.part_o);
    if (wide(t) && t.gather == kTensorMapGather) a.tma = encode_stage_maps(p, x, &a);
    const cudaError_t e = wide(t) ? launch_m64(a, kWork, stream) : mla_v1::launch(a, Pipe{t.stages, t.producers}, kWork, stream);
    return cuda_status(e, info().key + " launch");
  }
};

}  // namespace

const MlaKernel& entry() {
  static const V1Paged<Work::kAttention> kernel;
  return kernel;
}

const MlaKernel& floor_entry() {
  static const V1Paged<Work::kStreamOnly> kernel;
  return kernel;
}

}  // namespace mlakit::mla_v1
