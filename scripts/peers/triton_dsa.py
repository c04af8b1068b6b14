"""A plain Triton split-K DSA decode: the peer docs/peers.md times beside mlakit.

What the project's spec calls "plain Triton split-K (16 splits x 128 slots + combine)", written
here from that description. Kernel 1 runs one program per (token, split): it gathers its 128
slots of the token's index row in blocks of BLOCK_N rows (masked loads: padding moves no bytes;
the "s" configuration also skips a block of padding only), computes S = Q K^T with tl.dot (the
heads as M), a base-2 online softmax and O += P V, and writes the split's normalised partial O
(fp32) and its lse. Kernel 2 runs one program per (token, head) and merges the 16 partials. Same
contract as mlakit.dsa_sparse_attention: lse base 2, an empty row gives output 0 and lse -inf,
indices outside [0, num_slots) are padding.

It is a baseline for timing (scripts/peer_bench.py), never a product path. Needs torch and
triton (the GPU machine has both).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from peers import TRITON_CONFIGS as CONFIGS

NUM_SPLITS = 16
LOG2E = 1.4426950408889634


@triton.jit
def _attend_block(qn, qp, ckv, kpe, slot, valid, m_i, l_i, acc, scale_log2, stride_ckv, stride_kpe,
                  offs_v, offs_r):
    """One block of slots folded into the running (m, l, O): S = Q K^T, base-2 online softmax,
    O += P V. Masked loads: an invalid slot moves no bytes and its column of S is -inf."""
    row = tl.where(valid, slot, 0).to(tl.int64)
    k = tl.load(ckv + row[:, None] * stride_ckv + offs_v[None, :], mask=valid[:, None], other=0.0)
    kr = tl.load(kpe + row[:, None] * stride_kpe + offs_r[None, :], mask=valid[:, None], other=0.0)
    qk = tl.dot(qn, tl.trans(k)) + tl.dot(qp, tl.trans(kr))
    qk = tl.where(valid[None, :], qk * scale_log2, float("-inf"))
    m_new = tl.maximum(m_i, tl.max(qk, 1))
    m_use = tl.where(m_new == float("-inf"), 0.0, m_new)
    alpha = tl.exp2(m_i - m_use)
    p = tl.exp2(qk - m_use[:, None])
    l_i = l_i * alpha + tl.sum(p, 1)
    acc = acc * alpha[:, None] + tl.dot(p.to(tl.bfloat16), k)
    return m_new, l_i, acc


@triton.jit
def _dsa_split_kernel(q_nope, q_pe, ckv, kpe, indices, part_o, part_lse, scale_log2, num_slots, topk,
                      stride_qn_t, stride_qn_h, stride_qp_t, stride_qp_h, stride_ckv, stride_kpe, stride_idx_t,
                      H: tl.constexpr, DV: tl.constexpr, DR: tl.constexpr, SPLIT: tl.constexpr,
                      BLOCK_N: tl.constexpr, NUM_SPLITS: tl.constexpr, SKIP_PADDING: tl.constexpr):
    t = tl.program_id(0)
    s = tl.program_id(1)
    offs_h = tl.arange(0, H)
    offs_v = tl.arange(0, DV)
    offs_r = tl.arange(0, DR)
    qn = tl.load(q_nope + t * stride_qn_t + offs_h[:, None] * stride_qn_h + offs_v[None, :])
    qp = tl.load(q_pe + t * stride_qp_t + offs_h[:, None] * stride_qp_h + offs_r[None, :])
    m_i = tl.full([H], float("-inf"), tl.float32)
    l_i = tl.zeros([H], tl.float32)
    acc = tl.zeros([H, DV], tl.float32)
    for n0 in range(0, SPLIT, BLOCK_N):
        offs_n = s * SPLIT + n0 + tl.arange(0, BLOCK_N)
        slot = tl.load(indices + t * stride_idx_t + offs_n, mask=offs_n < topk, other=-1)
        valid = (slot >= 0) & (slot < num_slots)
        if SKIP_PADDING:  # a block of padding only is skipped (serving rows 1.4-1.8 x slower with it)
            if tl.sum(valid.to(tl.int32), 0) > 0:
                m_i, l_i, acc = _attend_block(qn, qp, ckv, kpe, slot, valid, m_i, l_i, acc, scale_log2,
                                              stride_ckv, stride_kpe, offs_v, offs_r)
        else:
            m_i, l_i, acc = _attend_block(qn, qp, ckv, kpe, slot, valid, m_i, l_i, acc, scale_log2, stride_ckv,
                                          stride_kpe, offs_v, offs_r)
    seen = l_i > 0.0
    l_safe = tl.where(seen, l_i, 1.0)
    base = t * NUM_SPLITS + s
    tl.store(part_o + (base * H + offs_h[:, None]) * DV + offs_v[None, :], acc / l_safe[:, None])
    tl.store(part_lse + base * H + offs_h, tl.where(seen, m_i + tl.log2(l_safe), float("-inf")))


@triton.jit
def _dsa_combine_kernel(part_o, part_lse, out, lse, H: tl.constexpr, DV: tl.constexpr, NUM_SPLITS: tl.constexpr):
    t = tl.program_id(0)
    h = tl.program_id(1)
    offs_s = tl.arange(0, NUM_SPLITS)
    offs_v = tl.arange(0, DV)
    lse_s = tl.load(part_lse + (t * NUM_SPLITS + offs_s) * H + h)
    m = tl.max(lse_s, 0)
    m_use = tl.where(m == float("-inf"), 0.0, m)
    w = tl.exp2(lse_s - m_use)
    w_sum = tl.sum(w, 0)
    o_s = tl.load(part_o + ((t * NUM_SPLITS + offs_s)[:, None] * H + h) * DV + offs_v[None, :])
    o = tl.sum(o_s * w[:, None], 0) / tl.where(w_sum > 0.0, w_sum, 1.0)
    tl.store(out + (t * H + h) * DV + offs_v, o.to(tl.bfloat16))
    tl.store(lse + t * H + h, tl.where(w_sum > 0.0, m_use + tl.log2(w_sum), float("-inf")))


def _slot_stride(cache: torch.Tensor, name: str) -> int:
    pages, page_size, _ = cache.shape
    if cache.stride(2) != 1 or (pages > 1 and cache.stride(0) != page_size * cache.stride(1)):
        raise ValueError(f"{name}: expected rows of one slot stride (innermost contiguous), got strides "
                         f"{tuple(cache.stride())}")
    return cache.stride(1)


class TritonSplitK:
    """Callable peer: allocates its partials once per (tokens, heads) and reuses them."""

    def __init__(self, config: str = "bn64w4"):
        if config not in CONFIGS:
            raise ValueError(f"config: expected one of {', '.join(CONFIGS)}, got {config!r}")
        self.config = config
        self.block_n, self.num_warps, self.skip_padding = CONFIGS[config]
        self._parts = {}

    def __call__(self, q_nope, q_pe, ckv_cache, kpe_cache, sparse_indices, sm_scale, out=None, lse=None):
        T, H, DV = q_nope.shape
        DR = q_pe.shape[-1]
        topk = sparse_indices.shape[1]
        if H != 16:
            raise ValueError(f"q_nope: the Triton peer runs 16 heads (the spec's peer), got {H}")
        if sparse_indices.dtype != torch.int32 or sparse_indices.stride(1) != 1:
            raise ValueError("sparse_indices: expected int32 rows with contiguous entries")
        split = triton.cdiv(triton.cdiv(topk, NUM_SPLITS), self.block_n) * self.block_n
        key = (T, H, DV, q_nope.device)
        if key not in self._parts:
            self._parts[key] = (torch.empty((T, NUM_SPLITS, H, DV), dtype=torch.float32, device=q_nope.device),
                                torch.empty((T, NUM_SPLITS, H), dtype=torch.float32, device=q_nope.device))
        part_o, part_lse = self._parts[key]
        if out is None:
            out = torch.empty((T, H, DV), dtype=torch.bfloat16, device=q_nope.device)
        if lse is None:
            lse = torch.empty((T, H), dtype=torch.float32, device=q_nope.device)
        num_slots = ckv_cache.shape[0] * ckv_cache.shape[1]
        _dsa_split_kernel[(T, NUM_SPLITS)](
            q_nope, q_pe, ckv_cache, kpe_cache, sparse_indices, part_o, part_lse, float(sm_scale) * LOG2E,
            num_slots, topk, q_nope.stride(0), q_nope.stride(1), q_pe.stride(0), q_pe.stride(1),
            _slot_stride(ckv_cache, "ckv_cache"), _slot_stride(kpe_cache, "kpe_cache"), sparse_indices.stride(0),
            H=H, DV=DV, DR=DR, SPLIT=split, BLOCK_N=self.block_n, NUM_SPLITS=NUM_SPLITS, SKIP_PADDING=self.skip_padding,
            num_warps=self.num_warps, num_stages=2)
        _dsa_combine_kernel[(T, H)](part_o, part_lse, out, lse, H=H, DV=DV, NUM_SPLITS=NUM_SPLITS, num_warps=4)
        return out, lse


# Named as spans.FLUSH_MARK: the kernel's name in the trace is the function's.
@triton.jit(do_not_specialize=["value"])
def mlakit_peer_l2_flush(buf, n, value, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    tl.store(buf + offs, tl.zeros([BLOCK], tl.int32) + value, mask=offs < n)


class L2Flush:
    """Writes a buffer of twice the L2 before a timed call (the workbench's cold-L2 rule); its kernel's
    name carries spans.FLUSH_MARK so that the span extraction can cut the trace at it."""

    BLOCK = 4096

    def __init__(self, device: torch.device):
        l2 = torch.cuda.get_device_properties(device).L2_cache_size
        self.buf = torch.empty(max(2 * l2, 1 << 20) // 4, dtype=torch.int32, device=device)
        self._count = 0

    def __call__(self):
        self._count += 1
        n = self.buf.numel()
        mlakit_peer_l2_flush[(triton.cdiv(n, self.BLOCK),)](self.buf, n, self._count, BLOCK=self.BLOCK)
