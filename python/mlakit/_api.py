"""The public calls of mlakit, kept thin: one C++ call per attention call on the common path.

Route of ``dsa_sparse_attention``, ``dsa_sparse_attention_fp8``, ``quantize_dsa_fp8`` and
``mla_decode``:

* a plain ``torch.Tensor`` in eager mode goes straight to ``mlakit._C`` (validation, cached plan,
  cached workspace and launch all happen there; the stream is PyTorch's current stream on the
  inputs' device);
* under ``torch.compile``, or for tensor subclasses (FakeTensor, functional tensors, ...), the call
  goes through the registered ``torch.ops.mlakit`` operators so tracing sees an opaque op;
* anything else (another DLPack producer, or garbage) goes to ``mlakit._C`` too, which accepts any
  DLPack tensor and raises TypeError for what is none.
"""

from __future__ import annotations

from . import _C

try:
    from . import _torch
except (ImportError, OSError) as _error:  # no PyTorch, or one that cannot load
    _torch = None
    _torch_error: str | None = f"{type(_error).__name__}: {_error}"
else:
    _torch_error = None

_run = _C.dsa_sparse_attention
_run_fp8 = _C.dsa_sparse_attention_fp8
_quantize = _C.quantize_dsa_fp8
_run_mla = _C.mla_decode

if _torch is not None:
    _Tensor = _torch.torch.Tensor
    # Only Dynamo traces a plain torch.Tensor through this code (other tracers pass subclasses,
    # which take the torch.ops route anyway), and it reads this check as True. The Dynamo-only
    # check is one Python call where torch.compiler.is_compiling makes two, on every eager call.
    _is_compiling = getattr(_torch.torch.compiler, "is_dynamo_compiling",
                            _torch.torch.compiler.is_compiling)
    # Older PyTorch has no DLPack exchange API: then the stream comes from Python.
    _needs_stream = not _torch.HAS_EXCHANGE_API
    _stream_of = _torch.current_stream_handle
else:
    _Tensor = None

    def _is_compiling() -> bool:
        return False

    _needs_stream = False
    _stream_of = None


def _stream_arg(tensor, stream):
    """The extension's stream argument: the given stream (a ``torch.cuda.Stream`` or a raw
    cudaStream_t as an int), else None (the extension asks the inputs' framework for its current
    stream), or PyTorch's current stream where PyTorch publishes no exchange API."""
    if stream is not None:
        return getattr(stream, "cuda_stream", stream)
    if _needs_stream and isinstance(tensor, _Tensor):
        return _stream_of(tensor)
    return None


def _through_ops(tensor, stream) -> bool:
    """Whether a call that is not plain eager PyTorch goes through the torch.ops operators (while
    compiling, or for tensor subclasses). Those run on the current stream: no ``stream`` there."""
    if _torch is None or not _torch.HAS_OPS or not isinstance(tensor, _Tensor):
        return False
    if stream is not None:
        raise ValueError("stream: only eager calls on plain torch.Tensors take a stream; while "
                         "compiling (or for tensor subclasses) the call runs on the current "
                         "stream: use `with torch.cuda.stream(s):`")
    return True


def dsa_sparse_attention(q_nope, q_pe, ckv_cache, kpe_cache, sparse_indices, sm_scale, *,
                         out=None, lse=None, attn_sink=None):
    """DeepSeek-V3.2 sparse attention decode over the slots ``sparse_indices`` selects.

    Args:
        q_nope: bf16 [T, H, 512] latent query (H = 16, 32, 64 or 128); token and head strides
            may be any multiple of 8 elements, the last dimension contiguous.
        q_pe: bf16 [T, H, 64] rope query, same layout rules.
        ckv_cache: bf16 [num_pages, page_size, 512] latent cache (K and V); slots evenly spaced
            (stride[0] == page_size * stride[1]), rows 16-byte aligned.
        kpe_cache: bf16 [num_pages, page_size, 64] rope-key cache, same rules.
        sparse_indices: int32 [T, topk] flat slots (page * page_size + offset); -1 is padding
            anywhere in a row; other values outside the cache are treated as padding (see
            ``check_indices``).
        sm_scale: softmax scale (a float; the contest passes 0.1352337788608801).
        out: optional bf16 [T, H, 512] contiguous output, written in place.
        lse: optional fp32 [T, H] contiguous base-2 log-sum-exp, written in place.
        attn_sink: optional fp32 [H] contiguous, an attention sink per head (natural log, as
            FlashMLA's): out = sum_j e^(s_j) v_j / (sum_j e^(s_j) + e^(attn_sink[h])), normalised
            once in fp32 inside the kernel; the lse stays that of the real logits.

    Returns:
        ``(out, lse)``; an empty row gives output 0 and lse -inf. The work is enqueued on the
        current CUDA stream of the inputs' device; nothing synchronizes. With ``out`` and ``lse``
        given and the shape seen before, a call allocates nothing (CUDA-graph friendly).

    Raises:
        TypeError: an argument is not a tensor, has the wrong dtype, or sm_scale is no number.
        ValueError: shapes, strides, alignment or devices break the contract.
        NotImplementedError: valid, but no kernel supports it (GPU architecture, head count).
        RuntimeError: a CUDA error or an allocation failure.
    """
    if type(q_nope) is _Tensor and not _is_compiling():
        return _run(q_nope, q_pe, ckv_cache, kpe_cache, sparse_indices, sm_scale, out, lse,
                    _stream_of(q_nope) if _needs_stream else None, attn_sink)
    return _dispatch(q_nope, q_pe, ckv_cache, kpe_cache, sparse_indices, sm_scale, out, lse,
                     attn_sink)


def _dispatch(q_nope, q_pe, ckv_cache, kpe_cache, sparse_indices, sm_scale, out, lse, attn_sink):
    if _through_ops(q_nope, None):
        return _torch.call_op(q_nope, q_pe, ckv_cache, kpe_cache, sparse_indices, sm_scale, out,
                              lse, attn_sink)
    return _run(q_nope, q_pe, ckv_cache, kpe_cache, sparse_indices, sm_scale, out, lse,
                _stream_arg(q_nope, None), attn_sink)


def dsa_sparse_attention_fp8(q_nope, q_pe, kv_cache, sparse_indices, sm_scale, *, out=None,
                             lse=None, stream=None, attn_sink=None):
    """``dsa_sparse_attention`` on DeepSeek-V3.2's FP8 cache (656-byte rows: 512 e4m3 latent
    values, 4 fp32 scales, 64 bf16 rope values; see ``quantize_dsa_fp8``).

    Args:
        q_nope: bf16 [T, H, 512] latent query (H = 16, 32, 64 or 128), layout rules as for
            ``dsa_sparse_attention``.
        q_pe: bf16 [T, H, 64] rope query, same rules.
        kv_cache: uint8 or float8_e4m3fn [num_pages, page_size, 656], or FlashMLA's
            [num_pages, page_size, 1, 656]; the rows of a page contiguous, pages any multiple of
            16 bytes apart (FlashMLA pads each page by one row), 16-byte aligned.
        sparse_indices: int32 [T, topk] flat slots (page * page_size + offset); -1 is padding.
        sm_scale: softmax scale (a float).
        out: optional bf16 [T, H, 512] contiguous output, written in place.
        lse: optional fp32 [T, H] contiguous base-2 log-sum-exp, written in place.
        stream: None (the current CUDA stream of the inputs' device), a ``torch.cuda.Stream``
            or a raw cudaStream_t as an int. Eager calls only.
        attn_sink: optional fp32 [H], as for ``dsa_sparse_attention``.

    Returns:
        ``(out, lse)``, computed on the dequantized cache with the semantics of
        ``dsa_sparse_attention``: an empty row gives output 0 and lse -inf; nothing
        synchronizes; with ``out`` and ``lse`` given and the shape seen before, a call allocates
        nothing (CUDA-graph friendly).

    Raises:
        As ``dsa_sparse_attention``; errors about the cache name ``kv_cache``.
    """
    if type(q_nope) is _Tensor and not _is_compiling():
        if stream is not None or _needs_stream:
            stream = _stream_arg(q_nope, stream)
        return _run_fp8(q_nope, q_pe, kv_cache, sparse_indices, sm_scale, out, lse, stream,
                        attn_sink)
    if _through_ops(q_nope, stream):
        return _torch.call_fp8_op(q_nope, q_pe, kv_cache, sparse_indices, sm_scale, out, lse,
                                  attn_sink)
    return _run_fp8(q_nope, q_pe, kv_cache, sparse_indices, sm_scale, out, lse,
                    _stream_arg(q_nope, stream), attn_sink)


def quantize_dsa_fp8(ckv, kpe=None, *, out=None, stream=None):
    """Writes DeepSeek-V3.2's FP8 cache of a bf16 cache, on the GPU.

    Per slot, the 512 latent values become 4 tiles of 128, each stored as e4m3 values with one
    fp32 scale: the smallest power of two >= max(amax / 448, 1e-4); the 64 rope values are
    copied. Dequantization (``dequantize_dsa_fp8``) is e4m3 * scale, exact in bf16.

    Args:
        ckv: bf16 [num_pages, page_size, 512] latent cache; or, with ``kpe=None``, the combined
            [num_pages, page_size, 576] cache (512 latent then 64 rope), split into views
            without a copy. Last dimension contiguous, slots evenly spaced
            (``stride[0] == page_size * stride[1]``), 16-byte aligned rows.
        kpe: bf16 [num_pages, page_size, 64] rope-key cache, same rules; or None (see ckv).
        out: optional uint8 or float8_e4m3fn [num_pages, page_size, 656] or
            [num_pages, page_size, 1, 656] destination, rows of a page contiguous, pages any
            multiple of 16 bytes apart (FlashMLA's padded pages: the padding is not written).
        stream: None (the current CUDA stream of the inputs' device), a ``torch.cuda.Stream``
            or a raw cudaStream_t as an int. Eager calls only.

    Returns:
        ``out``, or a new uint8 [num_pages, page_size, 656] tensor. Nothing synchronizes.

    Raises:
        TypeError: an argument is not a tensor or has the wrong dtype.
        ValueError: shapes, strides, alignment or devices break the contract.
        RuntimeError: a CUDA error or an allocation failure.
    """
    if type(ckv) is _Tensor and not _is_compiling():
        if stream is not None or _needs_stream:
            stream = _stream_arg(ckv, stream)
        return _quantize(ckv, kpe, out, stream)
    if _through_ops(ckv, stream):
        return _torch.call_quantize_op(ckv, kpe, out)
    return _quantize(ckv, kpe, out, _stream_arg(ckv, stream))


def dequantize_dsa_fp8(cache):
    """``(ckv, kpe)``, bf16 [num_pages, page_size, 512] and [num_pages, page_size, 64], of an FP8
    cache (uint8 or float8_e4m3fn, [num_pages, page_size, 656] or [num_pages, page_size, 1,
    656], any strides): each e4m3 value times its tile's fp32 scale, rounded to bf16 (exact for
    the quantizer's power-of-two scales), and the rope values as stored. Computed in PyTorch on
    the cache's device, for checks (``dsa_sparse_attention_fp8`` reads the FP8 cache itself)."""
    if _torch is None:
        raise ImportError(f"dequantize_dsa_fp8 needs PyTorch ({_torch_error})")
    return _torch.dequantize_dsa_fp8(cache)


def mla_decode(q_nope, q_pe, ckv_cache, kpe_cache, block_table, cache_seqlens, sm_scale, *,
               causal=False, out=None, lse=None):
    """Dense paged MLA decode (DeepSeek-V2/V3/R1, Kimi-K2): every query attends to the first
    ``cache_seqlens[b]`` rows of its request's pages.

    Args:
        q_nope: bf16 [b, s_q, h, 512] latent query; or, with ``q_pe=None``, the combined
            [b, s_q, h, 576] query (512 latent then 64 rope), split into views without a copy.
            Any strides with the last dimension contiguous, outer strides multiples of 8
            elements and at least the row width.
        q_pe: bf16 [b, s_q, h, 64] rope query, same rules; or None (see q_nope).
        ckv_cache: bf16 [num_pages, page_size, 512] latent cache (K and V); or, with
            ``kpe_cache=None``, the combined [num_pages, page_size, 576] cache. Page and row
            strides as for q_nope.
        kpe_cache: bf16 [num_pages, page_size, 64] rope-key cache; or None (see ckv_cache).
        block_table: int32 [b, max_pages]: row j of request i is row j % page_size of page
            ``block_table[i, j // page_size]``; rows contiguous, any row stride >= max_pages.
        cache_seqlens: int32 [b] contiguous: the rows each request holds (clamped to
            [0, max_pages * page_size]; ``mla_check_inputs`` reports values outside).
        sm_scale: softmax scale (a float).
        causal: with s_q > 1 (speculative tokens), query i of a request sees only its first
            ``cache_seqlens[b] - (s_q - 1 - i)`` rows.
        out: optional bf16 [b, s_q, h, 512] contiguous output, written in place.
        lse: optional fp32 [b, s_q, h] contiguous base-2 log-sum-exp, written in place.

    Returns:
        ``(out, lse)``; a query that sees no row gets output 0 and lse -inf. Enqueued on the
        current CUDA stream of the inputs' device; nothing synchronizes. With ``out`` and ``lse``
        given and the shape seen before, a call allocates nothing (CUDA-graph friendly).

    Raises:
        TypeError: an argument is not a tensor, has the wrong dtype, sm_scale is no number or
            causal no bool.
        ValueError: shapes, strides, alignment or devices break the contract.
        NotImplementedError: valid, but no kernel supports it (GPU architecture, head count,
            page size).
        RuntimeError: a CUDA error or an allocation failure.
    """
    if type(q_nope) is _Tensor and not _is_compiling():
        return _run_mla(q_nope, q_pe, ckv_cache, kpe_cache, block_table, cache_seqlens, sm_scale,
                        causal, out, lse, _stream_of(q_nope) if _needs_stream else None)
    if _through_ops(q_nope, None):
        return _torch.call_mla_op(q_nope, q_pe, ckv_cache, kpe_cache, block_table, cache_seqlens,
                                  sm_scale, causal, out, lse)
    return _run_mla(q_nope, q_pe, ckv_cache, kpe_cache, block_table, cache_seqlens, sm_scale,
                    causal, out, lse, _stream_arg(q_nope, None))


def mla_check_inputs(block_table, cache_seqlens, ckv_cache) -> None:
    """Raises ValueError naming the first ``cache_seqlens`` entry outside
    [0, max_pages * page_size] or the first page id outside [0, num_pages) among the pages a
    request uses (``mla_decode`` clamps the first and reads the second's rows as zeros). It
    synchronizes the current stream, so it cannot run inside a CUDA-graph capture."""
    stream = None
    if _needs_stream and type(block_table) is _Tensor:
        stream = _stream_of(block_table)
    _C.mla_check_inputs(block_table, cache_seqlens, ckv_cache, stream)


def mla_plan_info(batch: int, num_pages: int, max_pages: int, *, seq_q: int = 1,
                  num_heads: int = 16, page_size: int = 64, causal: bool = False,
                  device: int | None = None, head_dim_ckv: int = 512,
                  head_dim_kpe: int = 64) -> dict:
    """The plan an ``mla_decode`` call of this shape uses on ``device`` (default: the current
    CUDA device): ``{"problem", "kernel_key", "tiling", "workspace_bytes"}``."""
    return _C.mla_plan_info(batch, seq_q, num_heads, num_pages, page_size, max_pages, causal,
                            -1 if device is None else device, head_dim_ckv, head_dim_kpe)


def check_indices(sparse_indices, ckv_cache) -> None:
    """Raises ValueError naming the first index that is neither -1 nor a slot of ``ckv_cache``
    (the bf16 latent cache, or the FP8 cache of ``dsa_sparse_attention_fp8``).

    The attention call itself treats such indices as padding (it never reads outside the
    cache); this is the checked mode. It synchronizes the current stream, so it cannot run
    inside a CUDA-graph capture.
    """
    stream = None
    if _needs_stream and type(sparse_indices) is _Tensor:
        stream = _stream_of(sparse_indices)
    _C.check_indices(sparse_indices, ckv_cache, stream)


def plan_info(num_tokens: int, num_pages: int, page_size: int = 64, topk: int = 2048, *,
              device: int | None = None, num_heads: int = 16, head_dim_ckv: int = 512,
              head_dim_kpe: int = 64, kv: str = "bf16") -> dict:
    """The plan a ``dsa_sparse_attention`` call (``kv="fp8"``: ``dsa_sparse_attention_fp8``) of
    this shape uses on ``device`` (default: the current CUDA device):
    ``{"problem", "kernel_key", "tiling", "workspace_bytes"}``."""
    return _C.plan_info(num_tokens, num_pages, page_size, topk, -1 if device is None else device,
                        num_heads, head_dim_ckv, head_dim_kpe, kv)


def empty_cache() -> None:
    """Frees the cached per-(device, stream) workspaces and forgets the cached plans.

    Graphs captured earlier keep working: a captured call owns its own workspace."""
    _C.empty_cache()


def torch_integration() -> dict:
    """What the PyTorch integration of this process provides:
    ``{"loaded", "exchange_api", "ops", "error"}``."""
    if _torch is None:
        return {"loaded": False, "exchange_api": False, "ops": False, "error": _torch_error}
    return {"loaded": True, "exchange_api": _torch.HAS_EXCHANGE_API, "ops": _torch.HAS_OPS,
            "error": _torch.OPS_ERROR}
