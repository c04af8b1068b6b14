"""mlakit: DeepSeek-V3.2 sparse attention (DSA) and dense paged MLA decode kernels for NVIDIA
Hopper (sm_90a).

    import mlakit
    out, lse = mlakit.dsa_sparse_attention(q_nope, q_pe, ckv_cache, kpe_cache,
                                           sparse_indices, sm_scale)
    # on DeepSeek-V3.2's FP8 cache (656-byte rows), quantized on the GPU:
    kv_cache = mlakit.quantize_dsa_fp8(ckv_cache, kpe_cache)
    out, lse = mlakit.dsa_sparse_attention_fp8(q_nope, q_pe, kv_cache, sparse_indices,
                                               sm_scale)
    out, lse = mlakit.mla_decode(q_nope, q_pe, ckv_cache, kpe_cache, block_table,
                                 cache_seqlens, sm_scale, causal=False)

Tensors cross into the compiled extension (``mlakit._C``) through DLPack, so importing mlakit
does not need PyTorch. When PyTorch is importable, importing mlakit also registers
``torch.ops.mlakit.dsa_sparse_attention``, ``..._fp8``, ``quantize_dsa_fp8`` and
``torch.ops.mlakit.mla_decode`` (and their destination-passing twins ``..._out``) for
``torch.compile``. ``mlakit.compat`` holds FlashMLA drop-ins and needs PyTorch. See docs/python.md.

Extras: ``pip install 'mlakit[torch]'`` (PyTorch: torch.ops, ``mlakit.compat``, examples/) and
``pip install 'mlakit[plot]'`` (matplotlib, for ``mlakit report --png``).
"""

import atexit as _atexit

# PyTorch wheels carry their own CUDA runtime (libcudart.so.13). Loading torch before the
# extension makes the extension bind to that copy by soname; loading the extension first put the
# toolkit's copy in the process and torch's later import crashed (seen on the H200, torch
# 2.11+cu130, `import mlakit` with nothing imported before it).
try:
    import torch as _torch_runtime_first  # not `_torch`: that is the integration submodule's name

    del _torch_runtime_first
except (ImportError, OSError):  # no PyTorch, or one that cannot load: _api reports it
    pass

from . import _C
from ._api import (
    check_indices,
    dequantize_dsa_fp8,
    dsa_sparse_attention,
    dsa_sparse_attention_fp8,
    empty_cache,
    mla_check_inputs,
    mla_decode,
    mla_plan_info,
    plan_info,
    quantize_dsa_fp8,
    torch_integration,
)

__version__: str = _C.__version__

__all__ = [
    "__version__",
    "check_indices",
    "dequantize_dsa_fp8",
    "dsa_sparse_attention",
    "dsa_sparse_attention_fp8",
    "empty_cache",
    "mla_check_inputs",
    "mla_decode",
    "mla_plan_info",
    "plan_info",
    "quantize_dsa_fp8",
    "torch_integration",
]

# Free cached workspaces while the framework that allocated them is still alive.
_atexit.register(_C.empty_cache)
