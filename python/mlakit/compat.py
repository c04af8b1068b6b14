"""Drop-in replacements for the calls inference engines already make.

``flash_mla_sparse_fwd`` takes FlashMLA's arguments and returns FlashMLA's values (the
``flash_mla.flash_mla_sparse_fwd`` of deepseek-ai/FlashMLA, conventions of its 2026 releases),
computed by mlakit's DSA kernel::

    from mlakit.compat import flash_mla_sparse_fwd
    out, max_logits, lse = flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512)

- ``q`` [s_q, h_q, 576] bf16; ``kv`` [s_kv, 1, 576] bf16, the engines' combined buffer (512-wide
  latent then 64-wide rope key per token); ``indices`` [s_q, 1, topk] int32 rows of ``kv``
  (-1, or any value outside [0, s_kv), is invalid and skipped).
- ``out`` [s_q, h_q, 512] bf16; ``max_logits`` [s_q, h_q] fp32, the largest
  ``sm_scale * q . k``; ``lse`` [s_q, h_q] fp32, natural-log log-sum-exp of the scaled logits. A
  row with no valid index gives out 0, max_logits -inf and lse +inf (FlashMLA's conventions).

The buffers are handed to the kernel as views (``q[..., :512]``, ``q[..., 512:]``,
``kv[..., :512]``, ``kv[..., 512:]`` as a page-size-1 cache, ``indices[:, 0, :]``): nothing is
copied unless topk is not a multiple of 4 (the kernel reads index rows 16 bytes at a time) or
``topk_length`` is given. docs/python.md lists every difference from FlashMLA; the head counts
mlakit's kernels support are ``SUPPORTED_HEADS``.
"""

from __future__ import annotations

import math

import torch

from ._api import dsa_sparse_attention

__all__ = ["SUPPORTED_HEADS", "flash_mla_sparse_fwd"]

#: Query heads per call the DSA kernels are built for (one GPU of a TP-8 DeepSeek-V3.2).
SUPPORTED_HEADS = (16,)

_D_CKV, _D_KPE = 512, 64
_D_QK = _D_CKV + _D_KPE
_LN2 = math.log(2.0)
_TOKENS_PER_CHUNK = 32  # max_logits: bounds the gathered fp32 rows (32 x topk x 576 x 4 B)


def _describe(t) -> str:
    return f"{type(t).__name__} {list(t.shape)} {t.dtype}" if isinstance(t, torch.Tensor) \
        else type(t).__name__


def _expect_tensor(t, name: str, dtype: torch.dtype, ndim: int, layout: str) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {_describe(t)}")
    if t.dtype != dtype:
        raise TypeError(f"{name}: expected dtype {str(dtype).replace('torch.', '')}, "
                        f"got {str(t.dtype).replace('torch.', '')}")
    if t.dim() != ndim:
        raise ValueError(f"{name}: expected {ndim} dimensions {layout}, got shape {list(t.shape)}")


def check_arguments(q, kv, indices, d_v, attn_sink=None, topk_length=None) -> None:
    """Raises what FlashMLA's checks raise about, with mlakit's error types: TypeError for types
    and dtypes, ValueError for shapes, NotImplementedError for valid calls no mlakit kernel
    serves (head counts, d_qk = 512). Reads metadata only."""
    _expect_tensor(q, "q", torch.bfloat16, 3, "[s_q, h_q, d_qk]")
    _expect_tensor(kv, "kv", torch.bfloat16, 3, "[s_kv, h_kv, d_qk]")
    _expect_tensor(indices, "indices", torch.int32, 3, "[s_q, h_kv, topk]")
    s_q, h_q, d_qk = q.shape
    s_kv, h_kv, d_kv = kv.shape
    if d_v != _D_CKV:
        raise ValueError(f"d_v: expected 512 (the latent width; FlashMLA supports only 512 too), "
                         f"got {d_v}")
    if d_qk == _D_CKV:
        raise NotImplementedError("q: d_qk = 512 (a latent without a rope part) is not supported; "
                                  "mlakit's kernels take d_qk = 576 (512 latent + 64 rope)")
    if d_qk != _D_QK:
        raise ValueError(f"q: expected d_qk = 576 (512 latent + 64 rope), got shape {list(q.shape)}")
    if h_kv != 1:
        raise ValueError(f"kv: expected h_kv = 1 (MLA shares one latent per token), got shape "
                         f"{list(kv.shape)}")
    if d_kv != d_qk:
        raise ValueError(f"kv: expected d_qk = {d_qk} (that of q), got shape {list(kv.shape)}")
    if indices.shape[0] != s_q or indices.shape[1] != h_kv:
        raise ValueError(f"indices: expected shape [{s_q}, {h_kv}, topk] (s_q of q, h_kv of kv), "
                         f"got {list(indices.shape)}")
    if h_q not in SUPPORTED_HEADS:
        raise NotImplementedError(
            f"q: {h_q} query heads are not supported; mlakit's DSA kernels take h_q in "
            f"{list(SUPPORTED_HEADS)} (DeepSeek-V3.2 at TP 8). Pass the real heads, not heads "
            f"padded for FlashMLA")
    if attn_sink is not None:
        _expect_tensor(attn_sink, "attn_sink", torch.float32, 1, "[h_q]")
        if attn_sink.shape[0] != h_q:
            raise ValueError(f"attn_sink: expected shape [{h_q}] (h_q of q), got "
                             f"{list(attn_sink.shape)}")
    if topk_length is not None:
        _expect_tensor(topk_length, "topk_length", torch.int32, 1, "[s_q]")
        if topk_length.shape[0] != s_q:
            raise ValueError(f"topk_length: expected shape [{s_q}] (s_q of q), got "
                             f"{list(topk_length.shape)}")


def native_arguments(q, kv, indices, topk_length=None):
    """The views mlakit.dsa_sparse_attention takes for FlashMLA's buffers:
    ``(q_nope, q_pe, ckv_cache, kpe_cache, sparse_indices)``. The caches are page-size-1 views of
    ``kv`` ([s_kv, 1, 512] and [s_kv, 1, 64]); the only copy is of the indices, when topk is not
    a multiple of 4 (padded with -1) or ``topk_length`` masks their tails (set to -1)."""
    sparse_indices = indices[:, 0, :]                                   # [s_q, topk]
    s_q, topk = sparse_indices.shape
    if topk_length is not None:
        keep = torch.arange(topk, device=indices.device)[None, :] < topk_length[:, None]
        sparse_indices = torch.where(keep, sparse_indices, sparse_indices.new_full((), -1))
    if topk % 4 != 0 or sparse_indices.stride(0) % 4 != 0 or sparse_indices.stride(-1) != 1:
        padded = sparse_indices.new_full((s_q, (topk + 3) // 4 * 4), -1)
        padded[:, :topk] = sparse_indices
        sparse_indices = padded
    return (q[..., :_D_CKV], q[..., _D_CKV:], kv[..., :_D_CKV], kv[..., _D_CKV:], sparse_indices)


def lse_to_flashmla(lse_base2: torch.Tensor) -> torch.Tensor:
    """mlakit's base-2 lse (-inf for an empty row) as FlashMLA's natural-log lse (+inf there)."""
    return torch.where(lse_base2 == -math.inf, math.inf, lse_base2 * _LN2)


def apply_attn_sink(out: torch.Tensor, lse_natural: torch.Tensor,
                    attn_sink: torch.Tensor) -> torch.Tensor:
    """FlashMLA's attention sink: out * exp(lse) / (exp(lse) + exp(attn_sink[h])), computed in
    fp32 and rounded to bf16 once more. ``lse_natural`` holds -inf (not +inf) for empty rows,
    whose output stays 0; a sink of +inf zeroes a row, -inf leaves it."""
    factor = torch.sigmoid(lse_natural - attn_sink[None, :])
    factor = torch.where(lse_natural == -math.inf, torch.zeros_like(factor), factor)
    return (out.float() * factor[..., None]).to(torch.bfloat16)


def max_logits_of(q: torch.Tensor, kv: torch.Tensor, sparse_indices: torch.Tensor,
                  sm_scale: float) -> torch.Tensor:
    """max_j sm_scale * q[t, h] . kv[j] over the valid j of each row (fp32 gathers and matmuls,
    chunks of 32 tokens); -inf for an empty row. The kernel does not produce it: this is one
    more gather of the selected rows and a [h_q, 576] x [576, topk] product per token."""
    s_q, h_q, _ = q.shape
    kv2d = kv[:, 0, :]                                                   # [s_kv, 576]
    s_kv = kv2d.shape[0]
    out = torch.empty((s_q, h_q), dtype=torch.float32, device=q.device)
    for t0 in range(0, s_q, _TOKENS_PER_CHUNK):
        t1 = min(t0 + _TOKENS_PER_CHUNK, s_q)
        idx = sparse_indices[t0:t1].to(torch.int64)
        valid = (idx >= 0) & (idx < s_kv)
        k = kv2d[torch.where(valid, idx, torch.zeros_like(idx))].float()  # [c, topk, 576]
        logits = torch.bmm(q[t0:t1].float(), k.transpose(1, 2))         # [c, h_q, topk]
        logits.mul_(sm_scale).masked_fill_(~valid[:, None, :], -math.inf)
        out[t0:t1] = logits.amax(dim=-1) if logits.shape[-1] else -math.inf
    return out


def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v: int = 512, attn_sink=None,
                         topk_length=None, *, return_max_logits: bool = True):
    """FlashMLA's sparse attention forward on mlakit's DSA kernel.

    Args:
        q: bf16 [s_q, h_q, 576]; h_q in ``SUPPORTED_HEADS``.
        kv: bf16 [s_kv, 1, 576], the combined latent + rope buffer.
        indices: int32 [s_q, 1, topk]; entries outside [0, s_kv) (-1 by convention) are skipped.
        sm_scale: softmax scale (a float).
        d_v: must be 512.
        attn_sink: optional fp32 [h_q]: out is multiplied by exp(lse) / (exp(lse) + exp(sink)).
        topk_length: optional int32 [s_q]: row i uses only indices[i, :, :topk_length[i]].
        return_max_logits: False skips computing max_logits (returned as None): the kernel does
            not produce it, and its exact value costs a second gather of the selected rows.

    Returns:
        ``(out, max_logits, lse)`` as FlashMLA returns them: out bf16 [s_q, h_q, 512];
        max_logits fp32 [s_q, h_q] (-inf for an empty row); lse fp32 [s_q, h_q], natural log
        (+inf for an empty row). Work runs on the current CUDA stream.

    Raises:
        TypeError, ValueError: arguments FlashMLA would reject too (the message names the
            argument); NotImplementedError: valid for FlashMLA, not served by mlakit (head counts
            outside SUPPORTED_HEADS, d_qk = 512); errors of mlakit.dsa_sparse_attention.
    """
    check_arguments(q, kv, indices, d_v, attn_sink, topk_length)
    q_nope, q_pe, ckv, kpe, sparse_indices = native_arguments(q, kv, indices, topk_length)
    scale = float(sm_scale)
    out, lse_base2 = dsa_sparse_attention(q_nope, q_pe, ckv, kpe, sparse_indices, scale)
    if attn_sink is not None:
        out = apply_attn_sink(out, lse_base2 * _LN2, attn_sink)
    max_logits = max_logits_of(q, kv, sparse_indices, scale) if return_max_logits else None
    return out, max_logits, lse_to_flashmla(lse_base2)
