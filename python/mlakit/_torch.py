"""PyTorch integration, imported by mlakit only when ``import torch`` works.

* ``torch.ops.mlakit.dsa_sparse_attention(q_nope, q_pe, ckv_cache, kpe_cache, sparse_indices,
  sm_scale) -> (output, lse)``: functional; outputs allocated by the op.
* ``torch.ops.mlakit.dsa_sparse_attention_out(..., sm_scale, out, lse) -> None``: destination
  passing; mutates ``out`` and ``lse``.
* ``torch.ops.mlakit.dsa_sparse_attention_fp8(q_nope, q_pe, kv_cache, sparse_indices, sm_scale)
  -> (output, lse)`` and ``torch.ops.mlakit.dsa_sparse_attention_fp8_out(..., sm_scale, out, lse)
  -> None``: the same pair on DeepSeek-V3.2's FP8 cache.
* ``torch.ops.mlakit.mla_decode(q_nope, q_pe, ckv_cache, kpe_cache, block_table, cache_seqlens,
  sm_scale, causal) -> (output, lse)`` (q_pe and kpe_cache may be None: the combined layouts) and
  ``torch.ops.mlakit.mla_decode_out(..., causal, out, lse) -> None``, the same pair for dense
  paged MLA decode.

All have fake (meta) implementations, so ``torch.compile`` traces them as opaque ops with known
output shapes; none has a backward. ``mlakit.dsa_sparse_attention``,
``mlakit.dsa_sparse_attention_fp8`` and ``mlakit.mla_decode`` route to them while compiling.

No ``from __future__ import annotations`` here: torch.library reads the annotations below to infer
the operators' schemas.
"""

from typing import Optional, Tuple

import torch

from . import _C

_run = _C.dsa_sparse_attention
_run_fp8 = _C.dsa_sparse_attention_fp8
_run_mla = _C.mla_decode

_MLA_LATENT_WIDTH = 512  # the combined query [b, s_q, h, 576] is 512 latent then 64 rope

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
                             sm_scale: float) -> Tuple[torch.Tensor, torch.Tensor]:
        return _run(q_nope, q_pe, ckv_cache, kpe_cache, sparse_indices, sm_scale, None, None,
                    _stream(q_nope))

    @dsa_sparse_attention.register_fake
    def _(q_nope, q_pe, ckv_cache, kpe_cache, sparse_indices, sm_scale):
        return dsa_outputs(q_nope)

    @torch.library.custom_op("mlakit::dsa_sparse_attention_out", mutates_args=("out", "lse"))
    def dsa_sparse_attention_out(q_nope: torch.Tensor, q_pe: torch.Tensor,
                                 ckv_cache: torch.Tensor, kpe_cache: torch.Tensor,
                                 sparse_indices: torch.Tensor, sm_scale: float,
                                 out: torch.Tensor, lse: torch.Tensor) -> None:
        _run(q_nope, q_pe, ckv_cache, kpe_cache, sparse_indices, sm_scale, out, lse,
             _stream(q_nope))

    @dsa_sparse_attention_out.register_fake
    def _(q_nope, q_pe, ckv_cache, kpe_cache, sparse_indices, sm_scale, out, lse):
        return None

    @torch.library.custom_op("mlakit::dsa_sparse_attention_fp8", mutates_args=())
    def dsa_sparse_attention_fp8(q_nope: torch.Tensor, q_pe: torch.Tensor, kv_cache: torch.Tensor,
                                 sparse_indices: torch.Tensor,
                                 sm_scale: float) -> Tuple[torch.Tensor, torch.Tensor]:
        return _run_fp8(q_nope, q_pe, kv_cache, sparse_indices, sm_scale, None, None,
                        _stream(q_nope))

    @dsa_sparse_attention_fp8.register_fake
    def _(q_nope, q_pe, kv_cache, sparse_indices, sm_scale):
        return dsa_outputs(q_nope)

    @torch.library.custom_op("mlakit::dsa_sparse_attention_fp8_out", mutates_args=("out", "lse"))
    def dsa_sparse_attention_fp8_out(q_nope: torch.Tensor, q_pe: torch.Tensor,
                                     kv_cache: torch.Tensor, sparse_indices: torch.Tensor,
                                     sm_scale: float, out: torch.Tensor, lse: torch.Tensor) -> None:
        _run_fp8(q_nope, q_pe, kv_cache, sparse_indices, sm_scale, out, lse, _stream(q_nope))

    @dsa_sparse_attention_fp8_out.register_fake
    def _(q_nope, q_pe, kv_cache, sparse_indices, sm_scale, out, lse):
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


def _call_dsa_op(functional, destination, inputs, sm_scale, out, lse):
    """A DSA call through torch.ops: the functional operator when neither output is given, else
    the destination-passing one, with the missing output allocated."""
    sm_scale = float(sm_scale)
    if out is None and lse is None:
        return functional(*inputs, sm_scale)
    q_nope = inputs[0]
    if out is None:
        out = q_nope.new_empty(q_nope.shape, dtype=torch.bfloat16)
    if lse is None:
        lse = q_nope.new_empty(q_nope.shape[:2], dtype=torch.float32)
    destination(*inputs, sm_scale, out, lse)
    return out, lse


def call_op(q_nope, q_pe, ckv_cache, kpe_cache, sparse_indices, sm_scale, out, lse):
    """mlakit.dsa_sparse_attention through torch.ops (while compiling, or for subclasses)."""
    return _call_dsa_op(torch.ops.mlakit.dsa_sparse_attention,
                        torch.ops.mlakit.dsa_sparse_attention_out,
                        (q_nope, q_pe, ckv_cache, kpe_cache, sparse_indices), sm_scale, out, lse)


def call_fp8_op(q_nope, q_pe, kv_cache, sparse_indices, sm_scale, out, lse):
    """mlakit.dsa_sparse_attention_fp8 through torch.ops (while compiling, or for subclasses)."""
    return _call_dsa_op(torch.ops.mlakit.dsa_sparse_attention_fp8,
                        torch.ops.mlakit.dsa_sparse_attention_fp8_out,
                        (q_nope, q_pe, kv_cache, sparse_indices), sm_scale, out, lse)
