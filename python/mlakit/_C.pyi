"""
mlakit's compiled entry points (DeepSeek-V3.2 sparse attention and dense paged MLA decode on Hopper).

Written by `python -m nanobind.stubgen -m mlakit._C` (then __version__ added and the toolkit's
number left open); tests/python/test_stubs.py checks it against the built module. Tensors are
any DLPack producer; the typed public calls are in _api.pyi.
"""

__version__: str

cuda_runtime_version: int

def dsa_sparse_attention(q_nope: object | None, q_pe: object | None, ckv_cache: object | None, kpe_cache: object | None, sparse_indices: object | None, sm_scale: object | None, out: object | None = None, lse: object | None = None, stream: object | None = None, attn_sink: object | None = None) -> tuple:
    """
    Runs DSA sparse attention decode; returns (out, lse), allocating whichever is None.
    stream: None = the inputs' framework's current stream, else a cudaStream_t as int.
    attn_sink: None, or fp32 [num_heads]: a zero-valued logit per head in the denominator.
    """

def dsa_sparse_attention_fp8(q_nope: object | None, q_pe: object | None, kv_cache: object | None, sparse_indices: object | None, sm_scale: object | None, out: object | None = None, lse: object | None = None, stream: object | None = None, attn_sink: object | None = None) -> tuple:
    """
    Runs DSA sparse attention decode on the FP8 cache (uint8 or float8_e4m3fn
    [num_pages, page_size, 656] or [num_pages, page_size, 1, 656]); returns (out, lse),
    allocating whichever is None. stream: None = the inputs' framework's current stream, else
    a cudaStream_t as int. attn_sink: as dsa_sparse_attention's.
    """

def quantize_dsa_fp8(ckv: object | None, kpe: object | None = None, out: object | None = None, stream: object | None = None) -> object:
    """
    Writes the FP8 cache of bf16 ckv [num_pages, page_size, 512] and kpe [.., 64] (kpe None: ckv
    is the combined [.., 576] cache) into out, or a new uint8 [num_pages, page_size, 656]
    tensor; returns it. stream: None = the inputs' framework's current stream, else a
    cudaStream_t as int.
    """

def check_indices(sparse_indices: object | None, ckv_cache: object | None, stream: object | None = None) -> None:
    """
    Raises ValueError for an index that is neither -1 nor a slot of the cache (bf16 or FP8).
    Synchronizes.
    """

def plan_info(num_tokens: int, num_pages: int, page_size: int = 64, topk: int = 2048, device: int = -1, num_heads: int = 16, head_dim_ckv: int = 512, head_dim_kpe: int = 64, kv: str = 'bf16') -> dict:
    """
    The plan a call of this shape would use (kernel, tiling, workspace); kv: 'bf16' or 'fp8'.
    """

def mla_decode(q_nope: object | None, q_pe: object | None, ckv_cache: object | None, kpe_cache: object | None, block_table: object | None, cache_seqlens: object | None, sm_scale: object | None, causal: object | None = False, out: object | None = None, lse: object | None = None, stream: object | None = None) -> tuple:
    """
    Runs dense paged MLA decode; returns (out, lse), allocating whichever is None.
    q_pe None: q_nope is the combined [b, s_q, h, 576] query; kpe_cache None: ckv_cache is the
    combined [num_pages, page_size, 576] cache. stream: None = the inputs' framework's current
    stream, else a cudaStream_t as int.
    """

def mla_check_inputs(block_table: object | None, cache_seqlens: object | None, ckv_cache: object | None, stream: object | None = None) -> None:
    """
    Raises ValueError for a seqlen or a used page id outside the cache. Synchronizes.
    """

def mla_plan_info(batch: int, seq_q: int, num_heads: int, num_pages: int, page_size: int, max_pages: int, causal: bool = False, device: int = -1, head_dim_ckv: int = 512, head_dim_kpe: int = 64) -> dict:
    """The plan an mla_decode call of this shape would use."""

def describe_tensor(tensor: object | None) -> dict:
    """
    The DLPack view the binding reads of a tensor (route, dtype, shape, strides, device).
    """

def set_allocator(allocator: object | None) -> None:
    """
    Registers (shape, dtype_name, device_index) -> tensor for frameworks without a DLPack allocator; None clears it.
    """

def empty_cache() -> None:
    """Frees cached workspaces and forgets cached plans."""

def cache_stats() -> dict:
    """Counts of cached plans and workspaces, and the workspaces' bytes."""
