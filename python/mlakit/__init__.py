"""mlakit: DeepSeek-V3.2 sparse attention (DSA) decode kernels for NVIDIA Hopper (sm_90a).

    import mlakit
    out, lse = mlakit.dsa_sparse_attention(q_nope, q_pe, ckv_cache, kpe_cache,
                                           sparse_indices, sm_scale)

Tensors cross into the compiled extension (``mlakit._C``) through DLPack, so importing mlakit
does not need PyTorch. When PyTorch is importable, importing mlakit also registers
``torch.ops.mlakit.dsa_sparse_attention`` (and its destination-passing twin
``torch.ops.mlakit.dsa_sparse_attention_out``) for ``torch.compile``. See docs/python.md.
"""

import atexit as _atexit

from . import _C
from ._api import (
    check_indices,
    dsa_sparse_attention,
    empty_cache,
    plan_info,
    torch_integration,
)

__version__: str = _C.__version__

__all__ = [
    "__version__",
    "check_indices",
    "dsa_sparse_attention",
    "empty_cache",
    "plan_info",
    "torch_integration",
]

# Free cached workspaces while the framework that allocated them is still alive.
_atexit.register(_C.empty_cache)
