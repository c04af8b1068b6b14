"""PyTorch integration, imported by mlakit only when ``import torch`` works.

* ``torch.ops.mlakit.dsa_sparse_attention(q_nope, q_pe, ckv_cache, kpe_cache, sparse_indices,
  sm_scale) -> (output, lse)``: functional; outputs allocated by the op.
* ``torch.ops.mlakit.dsa_sparse_attention_out(..., sm_scale, out, lse) -> None``: destination
  passing; mutates ``out`` and ``lse``.
* ``torch.ops.mlakit.dsa_sparse_attention_fp8(q_nope, q_pe, kv_cache, sparse_indices, sm_scale)
  -> (output, lse)`` and ``torch.ops.mlakit.dsa_sparse_attention_fp8_out(..., sm_scale, out, lse)
  -> None``: the same pair on DeepSeek-V3.2's FP8 cache.
* ``torch.ops.mlakit.quantize_dsa_fp8(ckv, kpe) -> cache`` (kpe may be None: the combined cache)
  and ``torch.ops.mlakit.quantize_dsa_fp8_out(ckv, kpe, out) -> None``: the FP8 quantizer.
  The four DSA operators take an optional last argument ``attn_sink`` (fp32 [H] or None).
* ``torch.ops.mlakit.mla_decode(q_nope, q_pe, ckv_cache, kpe_cache, block_table, cache_seqlens,
  sm_scale, causal) -> (output, lse)`` (q_pe and kpe_cache may be None: the combined layouts) and
  ``torch.ops.mlakit.mla_decode_out(..., causal, out, lse) -> None``, the same pair for dense
  paged MLA decode.

All have fake (meta) implementations, so ``torch.compile`` traces them as opaque ops with known
output shapes; none has a backward. ``mlakit.dsa_sparse_attention``,
``mlakit.dsa_sparse_attention_fp8``, ``mlakit.quantize_dsa_fp8`` and ``mlakit.mla_decode`` route
to them while compiling.

``dequantize_dsa_fp8`` (``mlakit.dequantize_dsa_fp8``) reads an FP8 cache back in PyTorch.

No ``from __future__ import annotations`` here: torch.library reads the annotations below to infer
the operators' schemas.
"""

from typing import Optional, Tuple

import torch

from . import _C

_run = _C.dsa_sparse_attention
_run_fp8 = _C.dsa_sparse_attention_fp8
_quantize = _C.quantize_dsa_fp8
_run_mla = _C.mla_decode

_MLA_LATENT_WIDTH = 512  # the combined query [b, s_q, h, 576] is 512 latent then 64 rope

# DeepSeek-V3.2's FP8 cache row (include/mlakit/dsa_fp8.h): [0, 512) e4m3 latent, [512, 528) four
# fp32 scales (one per 128 latent channels), [528, 656) 64 bf16 rope values.
FP8_ROW_BYTES = 656
FP8_LATENT = 512
FP8_SCALES = slice(512, 528)
FP8_ROPE = slice(528, 656)
FP8_TILE = 128

_DTYPES = {
    "bfloat16": torch.bfloat16,
    "float32": torch.float32,
    "int32": torch.int32,
    "uint8": torch.uint8,
}


def _allocate(shape, dtype, device):
    """Allocator for the extension where torch publishes no DLPack allocator (older torch)."""
    return torch.empty(shape, dtype=_DTYPES[dtype], device=torch.device("cuda", device))


_C.set_allocator(_allocate)

# PyTorch >= 2.11 publishes the DLPack C exchange API on torch.Tensor: the extension then reads
# tensors, the current stream and the allocator through C calls. Probed through the extension,
# so that MLAKIT_NO_DLPACK_EXCHANGE=1 is honored here too.
HAS_EXCHANGE_API: bool = _C.describe_tensor(torch.empty(0))["route"] == "exchange"


def current_stream_handle(tensor: torch.Tensor) -> int:
    """The raw cudaStream_t of PyTorch's current stream on ``tensor``'s device (0 off CUDA; the
    extension then reports the device error)."""
    if tensor.is_cuda:
        return torch.cuda.current_stream(tensor.device).cuda_stream
    return 0


def _stream(tensor: torch.Tensor) -> Optional[int]:
    return None if HAS_EXCHANGE_API else current_stream_handle(tensor)


def _define_ops() -> Optional[str]:
    """Registers the torch.ops.mlakit operators; returns why not, or None on success."""
    if not hasattr(torch.library, "custom_op"):
        return f"torch {torch.__version__} has no torch.library.custom_op (needs >= 2.4)"
    try:
        torch.ops.mlakit.mla_decode  # noqa: B018  (defined by an earlier import?)
        return None
    except (AttributeError, RuntimeError):
        pass

    @torch.library.custom_op("mlakit::dsa_sparse_attention", mutates_args=())
    def dsa_sparse_attention(q_nope: torch.Tensor, q_pe: torch.Tensor, ckv_cache: torch.Tensor,
                             kpe_cache: torch.Tensor, sparse_indices: torch.Tensor,
                             sm_scale: float, attn_sink: Optional[torch.Tensor] = None
                             ) -> Tuple[torch.Tensor, torch.Tensor]:
        return _run(q_nope, q_pe, ckv_cache, kpe_cache, sparse_indices, sm_scale, None, None,
                    _stream(q_nope), attn_sink)

    @dsa_sparse_attention.register_fake
    def _(q_nope, q_pe, ckv_cache, kpe_cache, sparse_indices, sm_scale, attn_sink=None):
        return dsa_outputs(q_nope)

    @torch.library.custom_op("mlakit::dsa_sparse_attention_out", mutates_args=("out", "lse"))
    def dsa_sparse_attention_out(q_nope: torch.Tensor, q_pe: torch.Tensor,
                                 ckv_cache: torch.Tensor, kpe_cache: torch.Tensor,
                                 sparse_indices: torch.Tensor, sm_scale: float,
                                 out: torch.Tensor, lse: torch.Tensor,
                                 attn_sink: Optional[torch.Tensor] = None) -> None:
        _run(q_nope, q_pe, ckv_cache, kpe_cache, sparse_indices, sm_scale, out, lse,
             _stream(q_nope), attn_sink)

    @dsa_sparse_attention_out.register_fake
    def _(q_nope, q_pe, ckv_cache, kpe_cache, sparse_indices, sm_scale, out, lse, attn_sink=None):
        return None

    @torch.library.custom_op("mlakit::dsa_sparse_attention_fp8", mutates_args=())
    def dsa_sparse_attention_fp8(q_nope: torch.Tensor, q_pe: torch.Tensor, kv_cache: torch.Tensor,
                                 sparse_indices: torch.Tensor, sm_scale: float,
                                 attn_sink: Optional[torch.Tensor] = None
                                 ) -> Tuple[torch.Tensor, torch.Tensor]:
        return _run_fp8(q_nope, q_pe, kv_cache, sparse_indices, sm_scale, None, None,
                        _stream(q_nope), attn_sink)

    @dsa_sparse_attention_fp8.register_fake
    def _(q_nope, q_pe, kv_cache, sparse_indices, sm_scale, attn_sink=None):
        return dsa_outputs(q_nope)

    @torch.library.custom_op("mlakit::dsa_sparse_attention_fp8_out", mutates_args=("out", "lse"))
    def dsa_sparse_attention_fp8_out(q_nope: torch.Tensor, q_pe: torch.Tensor,
                                     kv_cache: torch.Tensor, sparse_indices: torch.Tensor,
                                     sm_scale: float, out: torch.Tensor, lse: torch.Tensor,
                                     attn_sink: Optional[torch.Tensor] = None) -> None:
        _run_fp8(q_nope, q_pe, kv_cache, sparse_indices, sm_scale, out, lse, _stream(q_nope),
                 attn_sink)

    @dsa_sparse_attention_fp8_out.register_fake
    def _(q_nope, q_pe, kv_cache, sparse_indices, sm_scale, out, lse, attn_sink=None):
        return None

    @torch.library.custom_op("mlakit::quantize_dsa_fp8", mutates_args=())
    def quantize_dsa_fp8(ckv: torch.Tensor, kpe: Optional[torch.Tensor]) -> torch.Tensor:
        return _quantize(ckv, kpe, None, _stream(ckv))

    @quantize_dsa_fp8.register_fake
    def _(ckv, kpe):
        num_pages, page_size = ckv.shape[:2]
        return ckv.new_empty((num_pages, page_size, FP8_ROW_BYTES), dtype=torch.uint8)

    @torch.library.custom_op("mlakit::quantize_dsa_fp8_out", mutates_args=("out",))
    def quantize_dsa_fp8_out(ckv: torch.Tensor, kpe: Optional[torch.Tensor],
                             out: torch.Tensor) -> None:
        _quantize(ckv, kpe, out, _stream(ckv))

    @quantize_dsa_fp8_out.register_fake
    def _(ckv, kpe, out):
        return None

    @torch.library.custom_op("mlakit::mla_decode", mutates_args=())
    def mla_decode(q_nope: torch.Tensor, q_pe: Optional[torch.Tensor], ckv_cache: torch.Tensor,
                   kpe_cache: Optional[torch.Tensor], block_table: torch.Tensor,
                   cache_seqlens: torch.Tensor, sm_scale: float,
                   causal: bool) -> Tuple[torch.Tensor, torch.Tensor]:
        return _run_mla(q_nope, q_pe, ckv_cache, kpe_cache, block_table, cache_seqlens, sm_scale,
                        causal, None, None, _stream(q_nope))

    @mla_decode.register_fake
    def _(q_nope, q_pe, ckv_cache, kpe_cache, block_table, cache_seqlens, sm_scale, causal):
        shape = mla_output_shape(q_nope, q_pe)
        return (q_nope.new_empty(shape, dtype=torch.bfloat16),
                q_nope.new_empty(shape[:3], dtype=torch.float32))

    @torch.library.custom_op("mlakit::mla_decode_out", mutates_args=("out", "lse"))
    def mla_decode_out(q_nope: torch.Tensor, q_pe: Optional[torch.Tensor],
                       ckv_cache: torch.Tensor, kpe_cache: Optional[torch.Tensor],
                       block_table: torch.Tensor, cache_seqlens: torch.Tensor, sm_scale: float,
                       causal: bool, out: torch.Tensor, lse: torch.Tensor) -> None:
        _run_mla(q_nope, q_pe, ckv_cache, kpe_cache, block_table, cache_seqlens, sm_scale, causal,
                 out, lse, _stream(q_nope))

    @mla_decode_out.register_fake
    def _(q_nope, q_pe, ckv_cache, kpe_cache, block_table, cache_seqlens, sm_scale, causal, out,
          lse):
        return None

    return None


OPS_ERROR: Optional[str] = _define_ops()
HAS_OPS: bool = OPS_ERROR is None


def mla_output_shape(q_nope, q_pe) -> Tuple[int, int, int, int]:
    """[b, s_q, h, 512] of mla_decode's output: q_nope's last dimension, or the latent part of the
    combined query when q_pe is None."""
    b, s_q, h, d = q_nope.shape
    return (b, s_q, h, d if q_pe is not None else _MLA_LATENT_WIDTH)


def call_mla_op(q_nope, q_pe, ckv_cache, kpe_cache, block_table, cache_seqlens, sm_scale, causal,
                out, lse):
    """mlakit.mla_decode through torch.ops (while compiling, or for subclasses)."""
    if not isinstance(causal, bool):  # as strict as the extension, which the eager path reaches
        raise TypeError(f"causal: expected a bool, got {type(causal).__name__}")
    sm_scale = float(sm_scale)
    if out is None and lse is None:
        return torch.ops.mlakit.mla_decode(q_nope, q_pe, ckv_cache, kpe_cache, block_table,
                                           cache_seqlens, sm_scale, causal)
    shape = mla_output_shape(q_nope, q_pe)
    if out is None:
        out = q_nope.new_empty(shape, dtype=torch.bfloat16)
    if lse is None:
        lse = q_nope.new_empty(shape[:3], dtype=torch.float32)
    torch.ops.mlakit.mla_decode_out(q_nope, q_pe, ckv_cache, kpe_cache, block_table,
                                    cache_seqlens, sm_scale, causal, out, lse)
    return out, lse


def dsa_outputs(q_nope) -> Tuple[torch.Tensor, torch.Tensor]:
    """New (output [T, H, 512] bf16, lse [T, H] fp32) for a DSA call of ``q_nope``."""
    num_tokens, num_heads, head_dim_ckv = q_nope.shape
    return (q_nope.new_empty((num_tokens, num_heads, head_dim_ckv), dtype=torch.bfloat16),
            q_nope.new_empty((num_tokens, num_heads), dtype=torch.float32))


def _call_dsa_op(functional, destination, inputs, sm_scale, out, lse, attn_sink):
    """A DSA call through torch.ops: the functional operator when neither output is given, else
    the destination-passing one, with the missing output allocated."""
    sm_scale = float(sm_scale)
    if out is None and lse is None:
        return functional(*inputs, sm_scale, attn_sink)
    q_nope = inputs[0]
    if out is None:
        out = q_nope.new_empty(q_nope.shape, dtype=torch.bfloat16)
    if lse is None:
        lse = q_nope.new_empty(q_nope.shape[:2], dtype=torch.float32)
    destination(*inputs, sm_scale, out, lse, attn_sink)
    return out, lse


def call_op(q_nope, q_pe, ckv_cache, kpe_cache, sparse_indices, sm_scale, out, lse, attn_sink=None):
    """mlakit.dsa_sparse_attention through torch.ops (while compiling, or for subclasses)."""
    return _call_dsa_op(torch.ops.mlakit.dsa_sparse_attention,
                        torch.ops.mlakit.dsa_sparse_attention_out,
                        (q_nope, q_pe, ckv_cache, kpe_cache, sparse_indices), sm_scale, out, lse,
                        attn_sink)


def call_fp8_op(q_nope, q_pe, kv_cache, sparse_indices, sm_scale, out, lse, attn_sink=None):
    """mlakit.dsa_sparse_attention_fp8 through torch.ops (while compiling, or for subclasses)."""
    return _call_dsa_op(torch.ops.mlakit.dsa_sparse_attention_fp8,
                        torch.ops.mlakit.dsa_sparse_attention_fp8_out,
                        (q_nope, q_pe, kv_cache, sparse_indices), sm_scale, out, lse, attn_sink)


def call_quantize_op(ckv, kpe, out):
    """mlakit.quantize_dsa_fp8 through torch.ops (while compiling, or for subclasses)."""
    if out is None:
        return torch.ops.mlakit.quantize_dsa_fp8(ckv, kpe)
    torch.ops.mlakit.quantize_dsa_fp8_out(ckv, kpe, out)
    return out


def dequantize_dsa_fp8(cache) -> Tuple[torch.Tensor, torch.Tensor]:
    """(ckv [P, PS, 512] bf16, kpe [P, PS, 64] bf16) of an FP8 cache: e4m3 * its tile's scale,
    computed in fp32 and rounded to bf16 (exact for scales that are powers of two, as the
    quantizer writes), and the rope bytes as they are."""
    if not isinstance(cache, torch.Tensor):
        raise TypeError(f"cache: expected a torch.Tensor, got {type(cache).__name__}")
    if cache.dtype not in (torch.uint8, torch.float8_e4m3fn):
        raise TypeError(f"cache: expected dtype uint8 or float8_e4m3fn, got "
                        f"{str(cache.dtype).replace('torch.', '')}")
    if cache.dim() == 4 and cache.shape[2] == 1:  # FlashMLA's [num_pages, page_size, 1, 656]
        cache = cache[:, :, 0]
    if cache.dim() != 3 or cache.shape[2] != FP8_ROW_BYTES:
        raise ValueError(f"cache: expected shape [num_pages, page_size, 656] or "
                         f"[num_pages, page_size, 1, 656], got {list(cache.shape)}")
    rows = cache.view(torch.uint8)
    num_pages, page_size = rows.shape[:2]
    codes = rows[..., :FP8_LATENT].view(torch.float8_e4m3fn).float()
    scales = rows[..., FP8_SCALES].contiguous().view(torch.float32)
    tiles = codes.reshape(num_pages, page_size, -1, FP8_TILE) * scales[..., None]
    ckv = tiles.reshape(num_pages, page_size, FP8_LATENT).to(torch.bfloat16)
    kpe = rows[..., FP8_ROPE].contiguous().view(torch.bfloat16)
    return ckv, kpe
