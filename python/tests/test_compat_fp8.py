"""mlakit.compat.flash_mla_with_kvcache with ``is_fp8_kvcache=True`` and ``indices``: FlashMLA's
sparse decode on DeepSeek-V3.2's FP8 cache, computed by mlakit.dsa_sparse_attention_fp8.

CPU (PyTorch only): argument checks, the views and index masking handed to the kernel, the
metadata placeholder. GPU (sm_90): the drop-in against the native call on the same buffers
(FlashMLA's padded float8 cache), with topk_length and the attention sink against the same
operations done by hand.
"""

import math

import pytest

from dsa_ref import CONTEST_SM_SCALE, assert_contest_close, make_inputs, mark_index_edge_cases

pytest.importorskip("torch", reason="PyTorch is not installed")

from mlakit import compat  # noqa: E402  (imports torch)

B, S, H, PAGES, PS, TOPK, ROW = 2, 2, 16, 8, 64, 128, 656


def sparse_args(torch, device="cpu", *, b=B, s_q=S, heads=H, topk=TOPK):
    """FlashMLA's sparse decode arguments of zeros: q [b, s_q, heads, 576] bf16, the FP8 cache as
    FlashMLA allocates it (float8_e4m3fn, each page padded by one row), indices [b, s_q, topk]."""
    cache = torch.zeros(PAGES, PS + 1, 1, ROW, dtype=torch.uint8, device=device)
    return dict(q=torch.zeros(b, s_q, heads, 576, dtype=torch.bfloat16, device=device),
                k_cache=cache.view(torch.float8_e4m3fn)[:, :PS],
                block_table=None, cache_seqlens=None, head_dim_v=512,
                tile_scheduler_metadata=None, softmax_scale=0.1, is_fp8_kvcache=True,
                indices=torch.zeros(b, s_q, topk, dtype=torch.int32, device=device))


# ----------------------------------------------------------------------------------- CPU ------

BAD_CALLS = {
    "not-fp8": (lambda t, a: a.update(is_fp8_kvcache=False), ValueError,
                "is_fp8_kvcache: sparse attention (indices) reads DeepSeek-V3.2's FP8 cache"),
    "causal": (lambda t, a: a.update(causal=True), ValueError, "causal: expected False"),
    "extra-cache": (lambda t, a: a.update(extra_k_cache=a["k_cache"]), NotImplementedError,
                    "extra_k_cache: an extra cache is not served"),
    "extra-topk-length": (lambda t, a: a.update(extra_topk_length=t.zeros(B, dtype=t.int32)),
                          NotImplementedError, "extra_topk_length"),
    "q-float16": (lambda t, a: a.update(q=a["q"].half()), NotImplementedError,
                  "q: float16 is not served"),
    "q-rank": (lambda t, a: a.update(q=a["q"][0]), ValueError, "q: expected 4 dimensions"),
    "q-width": (lambda t, a: a.update(q=a["q"][..., :512]), ValueError, "q: expected head_dim 576"),
    "heads-129": (lambda t, a: a.update(q=t.zeros(B, S, 129, 576, dtype=t.bfloat16)),
                  NotImplementedError, "q: 129 query heads; mlakit's kernels run at most 128"),
    "cache-bf16": (lambda t, a: a.update(k_cache=t.zeros(PAGES, PS, 1, 576, dtype=t.bfloat16)),
                   TypeError, "k_cache: expected dtype uint8 or float8_e4m3fn"),
    "cache-not-a-tensor": (lambda t, a: a.update(k_cache=[0]), TypeError,
                           "k_cache: expected a torch.Tensor"),
    "cache-3d": (lambda t, a: a.update(k_cache=a["k_cache"][:, :, 0]), ValueError,
                 "k_cache: expected shape [num_blocks, page_block_size, 1, 656]"),
    "head-dim-v": (lambda t, a: a.update(head_dim_v=576), ValueError, "head_dim_v: expected 512"),
    "indices-dtype": (lambda t, a: a.update(indices=a["indices"].long()), TypeError,
                      "indices: expected dtype int32, got int64"),
    "indices-shape": (lambda t, a: a.update(indices=a["indices"][:1]), ValueError,
                      "indices: expected shape [2, 2, topk]"),
    "sink-shape": (lambda t, a: a.update(attn_sink=t.zeros(8)), ValueError,
                   "attn_sink: expected shape [16]"),
    "topk-length-shape": (lambda t, a: a.update(topk_length=t.zeros(3, dtype=t.int32)),
                          ValueError, "topk_length: expected shape [2] (batch of q)"),
}


@pytest.mark.parametrize("case", list(BAD_CALLS))
def test_bad_arguments_raise_naming_the_argument(torch, case):
    a = sparse_args(torch)
    mutate, error, message = BAD_CALLS[case]
    mutate(torch, a)
    with pytest.raises(error) as info:
        compat.flash_mla_with_kvcache(**a)
    assert message in str(info.value)


def test_valid_arguments_reach_the_device_check(torch):
    with pytest.raises(ValueError, match=r"^q_nope: expected a CUDA tensor, got a tensor on cpu"):
        compat.flash_mla_with_kvcache(**sparse_args(torch))


def test_the_kernel_gets_views_of_q_and_the_tokens_in_batch_order(torch):
    a = sparse_args(torch)
    q, indices = a["q"], a["indices"]
    indices.copy_(torch.arange(B * S * TOPK, dtype=torch.int32).view(B, S, TOPK))
    q_nope, q_pe, sparse_indices = compat.sparse_decode_arguments(q, indices)
    assert q_nope.data_ptr() == q.data_ptr() and q_pe.data_ptr() == q.data_ptr() + 512 * 2
    assert tuple(q_nope.shape) == (B * S, H, 512) and tuple(q_pe.shape) == (B * S, H, 64)
    assert sparse_indices.data_ptr() == indices.data_ptr()
    assert torch.equal(sparse_indices, indices.view(B * S, TOPK))


def test_topk_length_masks_each_batch_and_topk_is_padded_to_a_multiple_of_4(torch):
    a = sparse_args(torch, topk=10)
    indices = torch.arange(B * S * 10, dtype=torch.int32).view(B, S, 10)
    lengths = torch.tensor([3, 10], dtype=torch.int32)
    _, _, got = compat.sparse_decode_arguments(a["q"], indices, lengths)
    assert tuple(got.shape) == (B * S, 12)
    want = torch.full((B * S, 12), -1, dtype=torch.int32)
    want[0, :3], want[1, :3] = indices[0, 0, :3], indices[0, 1, :3]  # batch 0: both queries
    want[2, :10], want[3, :10] = indices[1, 0], indices[1, 1]
    assert torch.equal(got, want)


def test_metadata_of_the_sparse_fp8_decode(torch):
    metadata, num_splits = compat.get_mla_metadata()  # FlashMLA's 2026 form
    assert num_splits is None and tuple(metadata.shape) == (0, 8)
    with pytest.raises(ValueError, match=r"^cache_seqlens: expected a CUDA tensor"):
        compat.get_mla_metadata(torch.zeros(B, dtype=torch.int32), S * H, 1, H, True, 2048)
    with pytest.raises(NotImplementedError, match=r"^is_fp8_kvcache: dense attention on an fp8 cache"):
        compat.get_mla_metadata(torch.zeros(B, dtype=torch.int32), S * H, 1, H, True, None)


# ----------------------------------------------------------------------------------- GPU ------

def fp8_inputs(torch, gpu, *, b=3, s_q=2, heads=H, topk=2048, seed=0, valid=None):
    """Random bf16 inputs quantized into FlashMLA's padded float8 cache (NaN bytes in the pad rows),
    as FlashMLA's arguments and as the native call's."""
    import mlakit

    q_nope, q_pe, ckv, kpe, idx = make_inputs(torch, b * s_q, num_pages=64, topk=topk, heads=heads,
                                              valid=valid, device=gpu, seed=seed)
    buf = torch.full((ckv.shape[0], ckv.shape[1] + 1, 1, ROW), 0x7F, dtype=torch.uint8, device=gpu)
    k_cache = buf.view(torch.float8_e4m3fn)[:, :ckv.shape[1]]
    mlakit.quantize_dsa_fp8(ckv, kpe, out=k_cache)
    q = torch.cat([q_nope, q_pe], dim=-1).view(b, s_q, heads, 576)
    return q, k_cache, idx.view(b, s_q, topk)


@pytest.mark.parametrize("heads,topk", [(16, 2048), (64, 2048), (16, 101)])
def test_matches_the_native_call_on_the_same_buffers(torch, gpu, heads, topk):
    import mlakit

    q, k_cache, indices = fp8_inputs(torch, gpu, heads=heads, topk=topk, seed=heads + topk)
    if topk == 2048:
        mark_index_edge_cases(indices.view(-1, topk), num_slots=k_cache.shape[0] * k_cache.shape[1])
    out, lse = compat.flash_mla_with_kvcache(q, k_cache, None, None, 512, None,
                                             softmax_scale=CONTEST_SM_SCALE, is_fp8_kvcache=True,
                                             indices=indices)
    q_nope, q_pe, sparse_indices = compat.sparse_decode_arguments(q, indices)
    n_out, n_lse = mlakit.dsa_sparse_attention_fp8(q_nope, q_pe, k_cache, sparse_indices,
                                                   CONTEST_SM_SCALE)
    torch.cuda.synchronize()
    b, s_q = q.shape[:2]
    assert out.dtype == torch.bfloat16 and tuple(out.shape) == (b, s_q, heads, 512)
    assert lse.dtype == torch.float32 and tuple(lse.shape) == (b, heads, s_q) and lse.is_contiguous()
    assert torch.equal(out, n_out.view(b, s_q, heads, 512))
    want_lse = compat.lse_to_flashmla(n_lse).view(b, s_q, heads).transpose(1, 2)
    assert torch.equal(lse, want_lse)
    if topk == 2048:  # row 3 of the edge cases (batch 1, query 1) holds one valid entry
        assert bool(torch.isfinite(lse[1, :, 1]).all())


# The sink is applied in the kernel (fp32, one rounding): against the sink applied by hand to the
# call without it (two roundings: within the contest rule). 16 heads, and 64 / 128 heads with
# enough tokens for the 64-head CTA (T x H >= 1024), whose epilogue is another.
@pytest.mark.parametrize("heads,b", [(16, 3), (64, 9), (128, 4)])
def test_topk_length_sink_and_empty_rows_match_the_same_operations_by_hand(torch, gpu, heads, b):
    import mlakit

    valid = [512, 512, 300, 300, 0, 0] + [512] * (2 * b - 6)
    q, k_cache, indices = fp8_inputs(torch, gpu, b=b, s_q=2, heads=heads, topk=512, seed=5,
                                     valid=valid)
    lengths = torch.tensor([512, 40, 7] + [512] * (b - 3), dtype=torch.int32, device=gpu)
    H = heads
    sink = torch.randn(H, device=gpu)
    sink[0], sink[1] = math.inf, -math.inf
    out, lse = compat.flash_mla_with_kvcache(q, k_cache, None, None, 512, None,
                                             softmax_scale=CONTEST_SM_SCALE, is_fp8_kvcache=True,
                                             indices=indices, attn_sink=sink, topk_length=lengths)
    masked = indices.clone()
    for i in range(3):
        masked[i, :, int(lengths[i]):] = -1
    q_nope, q_pe, _ = compat.sparse_decode_arguments(q, indices)
    n_out, n_lse = mlakit.dsa_sparse_attention_fp8(q_nope, q_pe, k_cache, masked.view(2 * b, 512),
                                                   CONTEST_SM_SCALE)
    lse_nat = n_lse * math.log(2.0)                  # [2b, H] fp32 as the drop-in; -inf if empty
    factor = torch.sigmoid(lse_nat - sink[None, :])
    factor = torch.where(torch.isneginf(lse_nat), torch.zeros_like(factor), factor)
    want_out = (n_out.float() * factor[..., None]).view(b, 2, H, 512)
    s_out, s_lse = mlakit.dsa_sparse_attention_fp8(q_nope, q_pe, k_cache, masked.view(2 * b, 512),
                                                   CONTEST_SM_SCALE, attn_sink=sink)
    torch.cuda.synchronize()
    assert torch.equal(out, s_out.view(b, 2, H, 512))   # the drop-in is the native call
    assert_contest_close(torch, out, want_out, "out")
    assert torch.equal(s_lse, n_lse)                    # the lse is the real logits'
    assert bool((out[:, :, 0] == 0).all())                                # a sink of +inf
    assert bool((out[2] == 0).all()) and bool(torch.isposinf(lse[2]).all())  # empty rows
    assert torch.equal(lse, compat.lse_to_flashmla(n_lse).view(b, 2, H).transpose(1, 2))
