"""Drop-in replacements for the calls inference engines already make.

Dense paged MLA decode: ``get_mla_metadata`` and ``flash_mla_with_kvcache`` take FlashMLA's
arguments and return its values, computed by ``mlakit.mla_decode``::

    from mlakit.compat import get_mla_metadata, flash_mla_with_kvcache
    tile_scheduler_metadata, num_splits = get_mla_metadata(cache_seqlens, s_q * h_q, 1)
    out, lse = flash_mla_with_kvcache(q, k_cache, block_table, cache_seqlens, 512,
                                      tile_scheduler_metadata, num_splits, causal=causal)

- ``q`` [b, s_q, h_q, 576] bf16; ``k_cache`` [num_pages, page_size, 1, 576] bf16;
  ``block_table`` [b, max_pages] int32; ``cache_seqlens`` [b] int32.
- ``out`` [b, s_q, h_q, 512] bf16; ``lse`` [b, h_q, s_q] fp32, natural log, +inf for a query
  that sees no row (FlashMLA's conventions).
- mlakit schedules inside its kernel: the metadata is a placeholder of FlashMLA's shapes and
  dtypes, and ``flash_mla_with_kvcache`` never reads it (any value is accepted, also FlashMLA's own
  or its 2026 ``FlashMLASchedMeta``).

Sparse decode on DeepSeek-V3.2's FP8 cache: the same ``flash_mla_with_kvcache`` with
``is_fp8_kvcache=True`` and ``indices`` (FlashMLA's sparse decode), computed by
``mlakit.dsa_sparse_attention_fp8``::

    out, lse = flash_mla_with_kvcache(q, k_cache, None, None, 512, tile_scheduler_metadata,
                                      softmax_scale=sm_scale, is_fp8_kvcache=True, indices=indices)

- ``k_cache`` uint8 or float8_e4m3fn [num_blocks, page_block_size, 1, 656] (512 e4m3, 4 fp32
  scales, 64 bf16 rope per token; FlashMLA's padded page stride is read in place); ``indices``
  int32 [b, s_q, topk] flat slots (page * page_block_size + offset, -1 skipped); ``attn_sink`` and
  ``topk_length`` as in FlashMLA; ``out`` and ``lse`` as for the dense decode.

Sparse attention on a bf16 cache: ``flash_mla_sparse_fwd`` takes FlashMLA's arguments and returns FlashMLA's values (the
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
``topk_length`` is given. docs/python.md lists every difference from FlashMLA.

Head counts: mlakit's kernels run ``SUPPORTED_HEADS``; any other h_q up to 128 (8 heads: Kimi-K2
at TP 8, DeepSeek at TP 16) runs at the next of them, q copied into a zero-padded buffer and the
outputs sliced back. ``attn_sink`` is applied inside the kernel, before its one rounding to bf16.
Rows of more than ``MAX_TOPK_PER_CALL`` indices run as chunks of 2048 merged by their lse in fp32.
"""

from __future__ import annotations

import math

try:
    import torch
except ImportError as _error:  # the drop-ins take and return torch.Tensors
    raise ModuleNotFoundError(f"mlakit.compat needs PyTorch: pip install 'mlakit[torch]' ({_error})",
                              name="torch") from _error

from ._api import dsa_sparse_attention, dsa_sparse_attention_fp8, mla_decode

__all__ = ["SUPPORTED_HEADS", "flash_mla_sparse_fwd", "flash_mla_with_kvcache", "get_mla_metadata"]

#: Query heads per call the kernels run natively: DeepSeek's 128 heads at TP 8, 4, 2 and 1
#: (data-parallel attention). Other counts up to 128 run padded to the next of these.
SUPPORTED_HEADS = (16, 32, 64, 128)
#: Indices per row one kernel call takes (each CTA compacts its whole row); longer rows (FlashMLA's
#: prefill tests use 4096 and 8192) run in chunks of _TOPK_CHUNK, merged by their lse.
MAX_TOPK_PER_CALL = 2560
_TOPK_CHUNK = 2048

_D_CKV, _D_KPE = 512, 64
_D_QK = _D_CKV + _D_KPE
_FP8_ROW_BYTES = 656  # DeepSeek-V3.2's FP8 cache row: 512 e4m3, 4 fp32 scales, 64 bf16 rope
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


def _padded_heads(h_q: int) -> int:
    """The head count a call of h_q query heads runs at: h_q itself when the kernels take it,
    else the next count they take (the extra heads are zeros, their outputs dropped)."""
    if h_q < 1:
        raise ValueError(f"q: expected at least one query head, got h_q = {h_q}")
    for h in SUPPORTED_HEADS:
        if h >= h_q:
            return h
    raise NotImplementedError(f"q: {h_q} query heads; mlakit's kernels run at most "
                              f"{SUPPORTED_HEADS[-1]} (DeepSeek's head count)")


def _pad_heads(x, dim: int, heads: int, fill: float = 0.0):
    """x with dimension `dim` padded to `heads` entries of `fill` (x itself when it has them)."""
    if x is None or x.shape[dim] == heads:
        return x
    shape = list(x.shape)
    shape[dim] = heads
    padded = x.new_full(shape, fill)
    padded.narrow(dim, 0, x.shape[dim]).copy_(x)
    return padded


def _unpad_heads(x, dim: int, h_q: int):
    """The first h_q heads of a padded output, contiguous as FlashMLA returns its outputs."""
    return x if x.shape[dim] == h_q else x.narrow(dim, 0, h_q).contiguous()


def _sparse_rows(run, sparse_indices, attn_sink):
    """``run(indices, attn_sink) -> (out [T, H, 512], lse [T, H] base 2)`` over the [T, topk]
    rows: one call when topk <= MAX_TOPK_PER_CALL, else one call per chunk of _TOPK_CHUNK
    columns, merged in fp32 by the chunks' lse (the sink joins the merge's denominator)."""
    topk = sparse_indices.shape[1]
    if topk <= MAX_TOPK_PER_CALL:
        return run(sparse_indices, attn_sink)
    parts = [run(sparse_indices[:, c:c + _TOPK_CHUNK], None) for c in range(0, topk, _TOPK_CHUNK)]
    lse = torch.stack([l for _, l in parts])                            # [chunks, T, H]
    top = lse.amax(dim=0)
    origin = torch.where(top == -math.inf, torch.zeros_like(top), top)
    w = torch.exp2(lse - origin)                                        # 0 for empty chunks
    total = w.sum(dim=0)
    out = sum(wi[..., None] * o.float() for wi, (o, _) in zip(w, parts))
    denominator = total
    if attn_sink is not None:
        denominator = total + torch.exp2(attn_sink.float() / _LN2 - origin)
    out = torch.where(total[..., None] > 0, out / denominator[..., None], torch.zeros_like(out))
    merged_lse = torch.where(total > 0, origin + torch.log2(total), torch.full_like(total, -math.inf))
    return out.to(torch.bfloat16), merged_lse


def _check_heads_sink_and_lengths(h_q, attn_sink, topk_length, rows, heads_name, rows_name) -> None:
    """The head count, ``attn_sink`` [h_q] and ``topk_length`` [rows] of a sparse call; the names
    are those of the dimensions in the caller's layout (FlashMLA's two interfaces differ)."""
    _padded_heads(h_q)
    if attn_sink is not None:
        _expect_tensor(attn_sink, "attn_sink", torch.float32, 1, f"[{heads_name}]")
        if attn_sink.shape[0] != h_q:
            raise ValueError(f"attn_sink: expected shape [{h_q}] ({heads_name} of q), got "
                             f"{list(attn_sink.shape)}")
    if topk_length is not None:
        _expect_tensor(topk_length, "topk_length", torch.int32, 1, f"[{rows_name}]")
        if topk_length.shape[0] != rows:
            raise ValueError(f"topk_length: expected shape [{rows}] ({rows_name} of q), got "
                             f"{list(topk_length.shape)}")


def check_arguments(q, kv, indices, d_v, attn_sink=None, topk_length=None) -> None:
    """Raises what FlashMLA's checks raise about, with mlakit's error types: TypeError for types
    and dtypes, ValueError for shapes, NotImplementedError for valid calls no mlakit kernel
    serves (more than 128 heads, d_qk = 512). Reads metadata only."""
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
    _check_heads_sink_and_lengths(h_q, attn_sink, topk_length, s_q, "h_q", "s_q")


def _kernel_indices(sparse_indices, row_lengths=None):
    """[rows, topk] int32 indices as the DSA kernels read them: entries past ``row_lengths[i]``
    (int32 [rows], or None) set to -1, and a copy padded with -1 to a multiple of 4 columns when
    topk is not one or the rows are not 16-byte aligned (the kernels read index rows 16 bytes at
    a time); otherwise the tensor itself."""
    rows, topk = sparse_indices.shape
    if row_lengths is not None:
        keep = torch.arange(topk, device=sparse_indices.device)[None, :] < row_lengths[:, None]
        sparse_indices = torch.where(keep, sparse_indices, sparse_indices.new_full((), -1))
    if topk % 4 != 0 or sparse_indices.stride(0) % 4 != 0 or sparse_indices.stride(-1) != 1:
        padded = sparse_indices.new_full((rows, (topk + 3) // 4 * 4), -1)
        padded[:, :topk] = sparse_indices
        sparse_indices = padded
    return sparse_indices


def native_arguments(q, kv, indices, topk_length=None):
    """The views mlakit.dsa_sparse_attention takes for FlashMLA's buffers:
    ``(q_nope, q_pe, ckv_cache, kpe_cache, sparse_indices)``. The caches are page-size-1 views of
    ``kv`` ([s_kv, 1, 512] and [s_kv, 1, 64]); the only copy is of the indices, when topk is not
    a multiple of 4 (padded with -1) or ``topk_length`` masks their tails (set to -1)."""
    sparse_indices = _kernel_indices(indices[:, 0, :], topk_length)      # [s_q, topk]
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
        q: bf16 [s_q, h_q, 576]; h_q up to 128 (``SUPPORTED_HEADS`` natively, others padded).
        kv: bf16 [s_kv, 1, 576], the combined latent + rope buffer.
        indices: int32 [s_q, 1, topk]; entries outside [0, s_kv) (-1 by convention) are skipped.
        sm_scale: softmax scale (a float).
        d_v: must be 512.
        attn_sink: optional fp32 [h_q]: out is multiplied by exp(lse) / (exp(lse) + exp(sink)),
            in the kernel (or, for rows of more than MAX_TOPK_PER_CALL indices, in the merge).
        topk_length: optional int32 [s_q]: row i uses only indices[i, :, :topk_length[i]].
        return_max_logits: False skips computing max_logits (returned as None): the kernel does
            not produce it, and its exact value costs a second gather of the selected rows.

    Returns:
        ``(out, max_logits, lse)`` as FlashMLA returns them: out bf16 [s_q, h_q, 512];
        max_logits fp32 [s_q, h_q] (-inf for an empty row); lse fp32 [s_q, h_q], natural log
        (+inf for an empty row). Work runs on the current CUDA stream.

    Raises:
        TypeError, ValueError: arguments FlashMLA would reject too (the message names the
            argument); NotImplementedError: valid for FlashMLA, not served by mlakit (more than
            128 heads, d_qk = 512); errors of mlakit.dsa_sparse_attention.
    """
    check_arguments(q, kv, indices, d_v, attn_sink, topk_length)
    h_q = q.shape[1]
    heads = _padded_heads(h_q)
    q_nope, q_pe, ckv, kpe, sparse_indices = native_arguments(_pad_heads(q, 1, heads), kv, indices,
                                                              topk_length)
    scale = float(sm_scale)
    out, lse_base2 = _sparse_rows(
        lambda idx, sink: dsa_sparse_attention(q_nope, q_pe, ckv, kpe, idx, scale, attn_sink=sink),
        sparse_indices, _pad_heads(attn_sink, 0, heads, -math.inf))
    out, lse_base2 = _unpad_heads(out, 1, h_q), _unpad_heads(lse_base2, 1, h_q)
    max_logits = max_logits_of(q, kv, sparse_indices, scale) if return_max_logits else None
    return out, max_logits, lse_to_flashmla(lse_base2)


# ---------------------------------------------------------------- dense paged MLA decode ------

#: Width of a row of FlashMLA's tile_scheduler_metadata (its TileSchedulerMetaDataSize).
_TILE_SCHEDULER_METADATA_SIZE = 8
#: FlashMLA's query rows per tile, with which it sizes num_sm_parts.
_FLASHMLA_BLOCK_M = 64


def _sm_count(device: torch.device) -> int:
    return torch.cuda.get_device_properties(device).multi_processor_count


def _not_served(name: str, what: str) -> NotImplementedError:
    return NotImplementedError(f"{name}: {what} is not served by mlakit.compat's MLA decode (dense "
                               f"attention on a bf16 cache; sparse attention on DeepSeek-V3.2's FP8 "
                               f"cache)")


def get_mla_metadata(cache_seqlens=None, num_q_tokens_per_head_k=None, num_heads_k=None,
                     num_heads_q=None, is_fp8_kvcache=False, topk=None):
    """FlashMLA's ``get_mla_metadata``: a placeholder of its shapes, which mlakit never reads.

    mlakit's kernel schedules its work itself (a persistent split-KV grid), so there is no
    metadata to compute; the values returned exist so that code written for FlashMLA (which
    keeps them, copies them into CUDA-graph buffers, passes them back) runs unchanged.

    Args (FlashMLA's, up to its 2025 releases):
        cache_seqlens: int32 [b] CUDA tensor.
        num_q_tokens_per_head_k: s_q * h_q // h_k.
        num_heads_k: h_k; MLA has one KV head, so only 1 is served.
        num_heads_q, is_fp8_kvcache, topk: as in FlashMLA. Served: dense attention on a bf16
            cache (no topk) and sparse attention on the FP8 cache (``is_fp8_kvcache=True`` with a
            topk); the other two combinations raise NotImplementedError.

    Returns:
        ``(tile_scheduler_metadata, num_splits)``: int32 zeros [num_sm_parts, 8] and int32
        ``arange(b + 1)`` (one split per request) on the device of ``cache_seqlens``, where
        num_sm_parts = max(sm_count // h_k // ceil(num_q_tokens_per_head_k / 64), 1) as in
        FlashMLA, so that buffers sized for FlashMLA's fit. Called without arguments (FlashMLA's
        2026 interface), ``(int32 [0, 8] CPU tensor, None)``.
    """
    if is_fp8_kvcache and topk is None:
        raise _not_served("is_fp8_kvcache", "dense attention on an fp8 cache")
    if topk is not None and not is_fp8_kvcache:
        raise _not_served("topk", "sparse attention on a bf16 cache (FlashMLA's sparse decode reads "
                                  "an FP8 cache; flash_mla_sparse_fwd serves a bf16 one)")
    if cache_seqlens is None:
        return torch.empty((0, _TILE_SCHEDULER_METADATA_SIZE), dtype=torch.int32), None
    for name, value in (("num_q_tokens_per_head_k", num_q_tokens_per_head_k),
                        ("num_heads_k", num_heads_k)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"{name}: expected an int, got {type(value).__name__}")
        if value < 1:
            raise ValueError(f"{name}: expected a positive int, got {value}")
    if num_heads_k != 1:
        raise NotImplementedError(f"num_heads_k: expected 1 (MLA shares one latent per token), "
                                  f"got {num_heads_k}")
    _expect_tensor(cache_seqlens, "cache_seqlens", torch.int32, 1, "[batch]")
    if not cache_seqlens.is_cuda:
        raise ValueError(f"cache_seqlens: expected a CUDA tensor, got a tensor on "
                         f"{cache_seqlens.device}")
    tiles = -(-num_q_tokens_per_head_k // _FLASHMLA_BLOCK_M)
    num_sm_parts = max(_sm_count(cache_seqlens.device) // num_heads_k // tiles, 1)
    device = cache_seqlens.device
    return (torch.zeros((num_sm_parts, _TILE_SCHEDULER_METADATA_SIZE), dtype=torch.int32,
                        device=device),
            torch.arange(cache_seqlens.shape[0] + 1, dtype=torch.int32, device=device))


def _check_query(q, head_dim_v) -> None:
    """q [batch, seq_q, num_heads_q, 576] bf16 and head_dim_v 512, for both forms of
    ``flash_mla_with_kvcache`` (float16 is valid for FlashMLA, not served here)."""
    if isinstance(q, torch.Tensor) and q.dtype == torch.float16:
        raise NotImplementedError("q: float16 is not served; mlakit's MLA kernels take bfloat16")
    _expect_tensor(q, "q", torch.bfloat16, 4, "[batch, seq_q, num_heads_q, 576]")
    if q.shape[-1] != _D_QK:
        raise ValueError(f"q: expected head_dim 576 (512 latent + 64 rope), got shape "
                         f"{list(q.shape)}")
    if head_dim_v != _D_CKV:
        raise ValueError(f"head_dim_v: expected 512 (the latent width; FlashMLA supports only 512 "
                         f"too), got {head_dim_v}")


def check_kvcache_arguments(q, k_cache, head_dim_v, is_fp8_kvcache=False, **sparse) -> None:
    """Raises what FlashMLA's checks of its dense ``flash_mla_with_kvcache`` raise about, with
    mlakit's error types, for q, k_cache, head_dim_v and the arguments of FlashMLA's sparse mode
    (``sparse``: name -> value, each must be None without indices). Reads metadata only;
    block_table and cache_seqlens are checked by mlakit.mla_decode under their own names."""
    if is_fp8_kvcache:
        raise _not_served("is_fp8_kvcache", "dense attention on an fp8 cache (sparse attention on it: "
                                            "pass indices)")
    for name, value in sparse.items():
        if value is not None:
            raise NotImplementedError(f"{name}: belongs to FlashMLA's sparse decode (with indices, on "
                                      f"an FP8 cache); mlakit.compat's dense decode takes none")
    _check_query(q, head_dim_v)
    _expect_tensor(k_cache, "k_cache", torch.bfloat16, 4,
                   "[num_pages, page_size, num_heads_k, 576]")
    if k_cache.shape[2] != 1:
        raise NotImplementedError(f"k_cache: expected num_heads_k = 1 (MLA shares one latent per "
                                  f"token), got shape {list(k_cache.shape)}")
    if k_cache.shape[3] != _D_QK:
        raise ValueError(f"k_cache: expected head_dim 576 (that of q), got shape "
                         f"{list(k_cache.shape)}")


def check_sparse_decode_arguments(q, k_cache, head_dim_v, causal, is_fp8_kvcache, indices,
                                   attn_sink, topk_length, **extra) -> None:
    """Raises what FlashMLA's sparse decode (``flash_mla_with_kvcache`` with ``indices``) raises
    about, with mlakit's error types; ``extra``: FlashMLA's extra-cache arguments, each must be
    None. Reads metadata only."""
    for name, value in extra.items():
        if value is not None:
            raise NotImplementedError(f"{name}: an extra cache is not served by mlakit.compat's "
                                      f"sparse decode (one FP8 cache per call)")
    if not is_fp8_kvcache:
        raise ValueError("is_fp8_kvcache: sparse attention (indices) reads DeepSeek-V3.2's FP8 cache, "
                         "as in FlashMLA; expected True (a bf16 cache: flash_mla_sparse_fwd)")
    if causal:
        raise ValueError("causal: expected False with indices (sparse attention), as in FlashMLA")
    _check_query(q, head_dim_v)
    if not isinstance(k_cache, torch.Tensor):
        raise TypeError(f"k_cache: expected a torch.Tensor, got {_describe(k_cache)}")
    if k_cache.dtype not in (torch.uint8, torch.float8_e4m3fn):
        raise TypeError(f"k_cache: expected dtype uint8 or float8_e4m3fn (656-byte FP8 rows), got "
                        f"{str(k_cache.dtype).replace('torch.', '')}")
    if k_cache.dim() != 4 or k_cache.shape[2] != 1 or k_cache.shape[3] != _FP8_ROW_BYTES:
        raise ValueError(f"k_cache: expected shape [num_blocks, page_block_size, 1, 656], got "
                         f"{list(k_cache.shape)}")
    _expect_tensor(indices, "indices", torch.int32, 3, "[batch, seq_q, topk]")
    b, s_q, h_q, _ = q.shape
    if tuple(indices.shape[:2]) != (b, s_q):
        raise ValueError(f"indices: expected shape [{b}, {s_q}, topk] (batch and seq_q of q), got "
                         f"{list(indices.shape)}")
    _check_heads_sink_and_lengths(h_q, attn_sink, topk_length, b, "num_heads_q", "batch")


def sparse_decode_arguments(q, indices, topk_length=None):
    """FlashMLA's sparse decode arguments as ``mlakit.dsa_sparse_attention_fp8``'s tokens:
    ``(q_nope, q_pe, sparse_indices)`` with T = batch x seq_q. q's views (a reshape, which copies
    only when q's first two dimensions cannot merge); the indices are copied when ``topk_length``
    masks them (-1 past each batch's length) or topk is not a multiple of 4."""
    b, s_q, h_q, _ = q.shape
    topk = indices.shape[-1]
    qt = q.reshape(b * s_q, h_q, _D_QK)
    lengths = None if topk_length is None else topk_length.repeat_interleave(s_q)  # [T]
    sparse_indices = _kernel_indices(indices.reshape(b * s_q, topk), lengths)
    return qt[..., :_D_CKV], qt[..., _D_CKV:], sparse_indices


def _sparse_decode(q, k_cache, head_dim_v, softmax_scale, causal, is_fp8_kvcache, indices,
                   attn_sink, topk_length, extra):
    check_sparse_decode_arguments(q, k_cache, head_dim_v, causal, is_fp8_kvcache, indices,
                                  attn_sink, topk_length, **extra)
    b, s_q, h_q, _ = q.shape
    heads = _padded_heads(h_q)
    q_nope, q_pe, sparse_indices = sparse_decode_arguments(_pad_heads(q, 2, heads), indices,
                                                           topk_length)
    scale = _D_QK ** -0.5 if softmax_scale is None else float(softmax_scale)
    out, lse_base2 = _sparse_rows(
        lambda idx, sink: dsa_sparse_attention_fp8(q_nope, q_pe, k_cache, idx, scale,
                                                   attn_sink=sink),
        sparse_indices, _pad_heads(attn_sink, 0, heads, -math.inf))
    out = _unpad_heads(out.view(b, s_q, heads, _D_CKV), 2, h_q)
    lse_base2 = _unpad_heads(lse_base2.view(b, s_q, heads), 2, h_q)
    return out, lse_to_flashmla(lse_base2.transpose(1, 2)).contiguous()


def flash_mla_with_kvcache(q, k_cache, block_table, cache_seqlens, head_dim_v,
                           tile_scheduler_metadata, num_splits=None, softmax_scale=None,
                           causal=False, is_fp8_kvcache=False, indices=None, attn_sink=None,
                           extra_k_cache=None, extra_indices_in_kvcache=None, topk_length=None,
                           extra_topk_length=None):
    """FlashMLA's paged decode on mlakit's kernels: dense attention on a bf16 cache
    (``mlakit.mla_decode``), or, with ``indices``, sparse attention on DeepSeek-V3.2's FP8 cache
    (``mlakit.dsa_sparse_attention_fp8``; FlashMLA's sparse decode).

    Args:
        q: bf16 [b, s_q, h_q, 576] (512 latent then 64 rope).
        k_cache: bf16 [num_pages, page_size, 1, 576], the combined paged cache.
        block_table: int32 [b, max_pages].
        cache_seqlens: int32 [b].
        head_dim_v: must be 512.
        tile_scheduler_metadata, num_splits: accepted and never read (see get_mla_metadata).
        softmax_scale: default 1 / sqrt(576), as in FlashMLA.
        causal: with s_q > 1, query i of a request sees its first n - (s_q - 1 - i) rows.
        is_fp8_kvcache, indices, attn_sink, topk_length: FlashMLA's sparse decode, served with
            ``is_fp8_kvcache=True`` and ``indices`` int32 [b, s_q, topk] (flat slots, page *
            page_block_size + offset; -1 or any slot outside the cache is skipped): ``k_cache``
            is then the FP8 cache, uint8 or float8_e4m3fn [num_blocks, page_block_size, 1, 656];
            ``block_table`` and ``cache_seqlens`` are not read; ``attn_sink`` fp32 [h_q] scales
            out by exp(lse) / (exp(lse) + exp(sink)); ``topk_length`` int32 [b] keeps each
            batch's first topk_length[i] indices. Without ``indices``, ``is_fp8_kvcache=True``,
            ``attn_sink`` and ``topk_length`` raise NotImplementedError.
        extra_k_cache, extra_indices_in_kvcache, extra_topk_length: FlashMLA's extra cache; not
            served (NotImplementedError).

    Returns:
        ``(out, lse)``: out bf16 [b, s_q, h_q, 512]; lse fp32 [b, h_q, s_q] contiguous, natural
        log, +inf for a query that sees no row. Work runs on the current CUDA stream.

    Raises:
        TypeError, ValueError: arguments FlashMLA would reject too (the message names the
            argument; layout errors name mlakit.mla_decode's views: ``q_nope`` is q,
            ``ckv_cache`` is ``k_cache[:, :, 0]``); NotImplementedError: valid for FlashMLA, not
            served by mlakit (fp16, fp8 cache without indices, num_heads_k > 1, more than 128
            heads, and page sizes mlakit.mla_decode does not serve). Other head counts run
            padded to the next of ``SUPPORTED_HEADS``.
    """
    if indices is not None:
        return _sparse_decode(q, k_cache, head_dim_v, softmax_scale, causal, is_fp8_kvcache,
                              indices, attn_sink, topk_length,
                              dict(extra_k_cache=extra_k_cache,
                                   extra_indices_in_kvcache=extra_indices_in_kvcache,
                                   extra_topk_length=extra_topk_length))
    check_kvcache_arguments(q, k_cache, head_dim_v, is_fp8_kvcache, attn_sink=attn_sink, extra_k_cache=extra_k_cache,
                            extra_indices_in_kvcache=extra_indices_in_kvcache,
                            topk_length=topk_length, extra_topk_length=extra_topk_length)
    scale = _D_QK ** -0.5 if softmax_scale is None else float(softmax_scale)
    h_q = q.shape[2]
    out, lse_base2 = mla_decode(_pad_heads(q, 2, _padded_heads(h_q)), None, k_cache.select(2, 0),
                                None, block_table, cache_seqlens, scale, causal=bool(causal))
    out, lse_base2 = _unpad_heads(out, 2, h_q), _unpad_heads(lse_base2, 2, h_q)
    return out, lse_to_flashmla(lse_base2.transpose(1, 2)).contiguous()
