"""mlakit.compat.flash_mla_sparse_fwd: FlashMLA's arguments and return values on mlakit's kernel.

CPU (PyTorch only): argument checks, the zero-copy views of the combined buffers, the index
padding and masking, the lse / attention-sink / max_logits conversions. GPU (sm_90): the drop-in
against the native call on the same buffers and against a FlashMLA-convention fp64 reference.
"""

import math

import pytest

from dsa_ref import CONTEST_SM_SCALE, assert_contest_close

pytest.importorskip("torch", reason="PyTorch is not installed")

from mlakit import compat  # noqa: E402  (imports torch)


def flashmla_inputs(torch, s_q, *, h_q=16, pages=16, topk=128, device="cpu", seed=0):
    """q [s_q, h_q, 576], kv [pages * 64, 1, 576] as the view of a paged [pages, 64, 576] cache,
    indices [s_q, 1, topk] of distinct random rows of kv."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    q = torch.randn(s_q, h_q, 576, generator=g).to(torch.bfloat16).to(device)
    cache = torch.randn(pages, 64, 576, generator=g).to(torch.bfloat16).to(device)
    kv = cache.view(pages * 64, 1, 576)
    rows = [torch.randperm(pages * 64, generator=g)[:topk] for _ in range(s_q)]
    indices = (torch.stack(rows) if rows else torch.empty(0, topk, dtype=torch.int64))
    return q, kv, indices.to(torch.int32).view(s_q, 1, topk).to(device), cache


def flashmla_reference(torch, q, kv, indices, sm_scale, attn_sink=None, topk_length=None):
    """FlashMLA's definitions in fp64: natural-log lse (+inf for an empty row), max_logits of the
    scaled logits (-inf for an empty row), the attention sink as exp(lse) / (exp(lse) + exp(sink))."""
    idx = indices[:, 0, :].long()
    s_q, topk = idx.shape
    s_kv = kv.shape[0]
    invalid = (idx < 0) | (idx >= s_kv)
    if topk_length is not None:
        invalid |= torch.arange(topk, device=idx.device)[None, :] >= topk_length[:, None].long()
    k = kv[:, 0, :].double()[idx.clamp(0, s_kv - 1)]                    # [s_q, topk, 576]
    logits = torch.bmm(q.double(), k.transpose(1, 2)) * sm_scale
    logits.masked_fill_(invalid[:, None, :], -math.inf)
    lse = torch.logsumexp(logits, dim=-1)
    max_logits = logits.amax(dim=-1)
    lse_for_o = lse if attn_sink is None else torch.logaddexp(lse, attn_sink.double()[None, :])
    probs = torch.exp(logits - lse_for_o[..., None]).nan_to_num(0.0)
    out = torch.bmm(probs, k[..., :512])
    lse = torch.where(lse == -math.inf, math.inf, lse)
    return out, max_logits, lse


# ----------------------------------------------------------------------------------- CPU ------

BAD_CALLS = {
    "q-not-a-tensor": (lambda t, a: a.update(q=[1, 2]), TypeError, "q: expected a torch.Tensor"),
    "q-dtype": (lambda t, a: a.update(q=a["q"].half()), TypeError,
                "q: expected dtype bfloat16, got float16"),
    "q-rank": (lambda t, a: a.update(q=a["q"][0]), ValueError, "q: expected 3 dimensions"),
    "kv-heads": (lambda t, a: a.update(kv=a["kv"].expand(-1, 2, -1)), ValueError,
                 "kv: expected h_kv = 1"),
    "kv-width": (lambda t, a: a.update(kv=a["kv"][..., :570]), ValueError,
                 "kv: expected d_qk = 576"),
    "d-qk-512": (lambda t, a: a.update(q=a["q"][..., :512], kv=a["kv"][..., :512]),
                 NotImplementedError, "d_qk = 512"),
    "d-qk-600": (lambda t, a: a.update(q=t.zeros(2, 16, 600, dtype=t.bfloat16)), ValueError,
                 "q: expected d_qk = 576"),
    "indices-dtype": (lambda t, a: a.update(indices=a["indices"].long()), TypeError,
                      "indices: expected dtype int32, got int64"),
    "indices-shape": (lambda t, a: a.update(indices=a["indices"][:1]), ValueError,
                      "indices: expected shape [2, 1, topk]"),
    "heads-129": (lambda t, a: a.update(q=t.zeros(2, 129, 576, dtype=t.bfloat16)),
                  NotImplementedError, "q: 129 query heads; mlakit's kernels run at most 128"),
    "heads-0": (lambda t, a: a.update(q=t.zeros(2, 0, 576, dtype=t.bfloat16)), ValueError,
                "q: expected at least one query head"),
    "d-v": (lambda t, a: a.update(d_v=256), ValueError, "d_v: expected 512"),
    "sink-shape": (lambda t, a: a.update(attn_sink=t.zeros(8)), ValueError,
                   "attn_sink: expected shape [16]"),
    "sink-dtype": (lambda t, a: a.update(attn_sink=t.zeros(16, dtype=t.bfloat16)), TypeError,
                   "attn_sink: expected dtype float32"),
    "topk-length-dtype": (lambda t, a: a.update(topk_length=t.zeros(2, dtype=t.int64)), TypeError,
                          "topk_length: expected dtype int32"),
    "topk-length-shape": (lambda t, a: a.update(topk_length=t.zeros(3, dtype=t.int32)),
                          ValueError, "topk_length: expected shape [2]"),
}


@pytest.mark.parametrize("case", list(BAD_CALLS))
def test_bad_arguments_raise_naming_the_argument(torch, case):
    q, kv, indices, _ = flashmla_inputs(torch, 2)
    args = dict(q=q, kv=kv, indices=indices, sm_scale=0.1, d_v=512)
    mutate, error, message = BAD_CALLS[case]
    mutate(torch, args)
    with pytest.raises(error) as info:
        compat.flash_mla_sparse_fwd(**args)
    assert message in str(info.value)


def test_the_kernel_gets_views_of_the_combined_buffers(torch):
    q, kv, indices, cache = flashmla_inputs(torch, 3, topk=128)
    q_nope, q_pe, ckv, kpe, sparse_indices = compat.native_arguments(q, kv, indices)
    assert q_nope.data_ptr() == q.data_ptr() and q_pe.data_ptr() == q.data_ptr() + 512 * 2
    assert ckv.data_ptr() == cache.data_ptr() and kpe.data_ptr() == cache.data_ptr() + 512 * 2
    assert sparse_indices.data_ptr() == indices.data_ptr()
    assert tuple(q_nope.shape) == (3, 16, 512) and tuple(q_pe.shape) == (3, 16, 64)
    assert tuple(ckv.shape) == (16 * 64, 1, 512) and tuple(kpe.shape) == (16 * 64, 1, 64)
    assert ckv.stride(0) == 576 and kpe.stride(0) == 576
    assert torch.equal(sparse_indices, indices[:, 0, :])


def test_indices_are_padded_with_minus_one_when_topk_is_not_a_multiple_of_4(torch):
    q, kv, indices, _ = flashmla_inputs(torch, 3, topk=37)
    sparse_indices = compat.native_arguments(q, kv, indices)[4]
    assert tuple(sparse_indices.shape) == (3, 40) and sparse_indices.is_contiguous()
    assert torch.equal(sparse_indices[:, :37], indices[:, 0, :])
    assert bool((sparse_indices[:, 37:] == -1).all())


def test_topk_length_sets_the_tail_of_each_row_to_minus_one(torch):
    q, kv, indices, _ = flashmla_inputs(torch, 3, topk=64)
    lengths = torch.tensor([0, 10, 64], dtype=torch.int32)
    sparse_indices = compat.native_arguments(q, kv, indices, lengths)[4]
    assert bool((sparse_indices[0] == -1).all())
    assert torch.equal(sparse_indices[1, :10], indices[1, 0, :10])
    assert bool((sparse_indices[1, 10:] == -1).all())
    assert torch.equal(sparse_indices[2], indices[2, 0])


def test_lse_becomes_natural_log_with_plus_inf_for_empty_rows(torch):
    lse2 = torch.tensor([[1.0, -math.inf], [0.0, -2.5]])
    lse = compat.lse_to_flashmla(lse2)
    assert torch.equal(lse, torch.tensor([[math.log(2.0), math.inf], [0.0, -2.5 * math.log(2.0)]]))


def test_max_logits_is_the_largest_scaled_logit_of_the_valid_entries(torch):
    q, kv, indices, _ = flashmla_inputs(torch, 40, topk=64, seed=5)
    indices[0, 0, :] = -1                 # an empty row
    indices[1, 0, ::2] = -1               # padding anywhere
    indices[2, 0, 5] = kv.shape[0]        # >= s_kv: invalid as in FlashMLA
    indices[3, 0, 7] = -7                 # any negative: invalid
    for scale in (CONTEST_SM_SCALE, -0.5):
        got = compat.max_logits_of(q, kv, indices[:, 0, :], scale)
        _, want, _ = flashmla_reference(torch, q, kv, indices, scale)
        assert bool(torch.isneginf(got[0]).all())
        assert torch.allclose(got[1:].double(), want[1:], rtol=1e-5, atol=1e-4)


def test_on_cpu_tensors_the_call_reaches_the_binding_device_check(torch):
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible: CPU tensors are not what this checks there")
    q, kv, indices, _ = flashmla_inputs(torch, 2)
    with pytest.raises(ValueError, match="expected a CUDA tensor"):
        compat.flash_mla_sparse_fwd(q, kv, indices, 0.1)


# ----------------------------------------------------------------------------------- GPU ------

def rows_with_edge_cases(torch, indices, s_kv):
    """-1 anywhere, a row of only -1, indices >= s_kv and < -1 (all invalid for FlashMLA)."""
    indices = indices.clone()
    indices[0, 0, ::3] = -1
    indices[1, 0, :] = -1
    indices[2, 0, 4] = s_kv
    indices[2, 0, 9] = s_kv + 100
    indices[3, 0, 1] = -5
    return indices


@pytest.mark.parametrize("topk", [2048, 101])
def test_matches_the_native_call_on_the_same_buffers(torch, gpu, topk):
    import mlakit

    q, kv, indices, cache = flashmla_inputs(torch, 6, pages=64, topk=topk, device=gpu, seed=topk)
    indices = rows_with_edge_cases(torch, indices, kv.shape[0])
    out, max_logits, lse = compat.flash_mla_sparse_fwd(q, kv, indices, CONTEST_SM_SCALE)
    # The native call on the same combined buffer (page size 1)...
    args = compat.native_arguments(q, kv, indices)
    n_out, n_lse = mlakit.dsa_sparse_attention(*args, CONTEST_SM_SCALE)
    torch.cuda.synchronize()
    assert torch.equal(out, n_out)
    assert torch.equal(lse, compat.lse_to_flashmla(n_lse))
    assert bool(torch.isposinf(lse[1]).all()) and bool(torch.isneginf(max_logits[1]).all())
    # ... and on the paged cache it is a view of (pages of 64, same flat slots).
    p_out, p_lse = mlakit.dsa_sparse_attention(args[0], args[1], cache[..., :512], cache[..., 512:],
                                               args[4], CONTEST_SM_SCALE)
    assert_contest_close(torch, out, p_out, "output vs the page-size-64 call")
    assert torch.allclose(lse[lse.isfinite()], (p_lse * math.log(2.0))[lse.isfinite()], atol=1e-5)


@pytest.mark.parametrize("s_q,h_q", [(1, 16), (8, 16), (64, 16), (4, 64), (2, 128)])
def test_matches_a_flashmla_convention_reference(torch, gpu, s_q, h_q):
    q, kv, indices, _ = flashmla_inputs(torch, s_q, h_q=h_q, pages=256, topk=2048, device=gpu, seed=s_q)
    if s_q >= 4:
        indices = rows_with_edge_cases(torch, indices, kv.shape[0])
    out, max_logits, lse = compat.flash_mla_sparse_fwd(q, kv, indices, CONTEST_SM_SCALE)
    want_out, want_max, want_lse = flashmla_reference(torch, q, kv, indices, CONTEST_SM_SCALE)
    assert out.dtype == torch.bfloat16 and tuple(out.shape) == (s_q, h_q, 512)
    assert max_logits.dtype == torch.float32 and lse.dtype == torch.float32
    assert_contest_close(torch, out, want_out, "out")
    finite = torch.isfinite(want_lse)
    assert torch.equal(torch.isposinf(lse), torch.isposinf(want_lse))
    assert torch.allclose(lse[finite].double(), want_lse[finite], rtol=1e-5, atol=1e-4)
    assert torch.equal(torch.isneginf(max_logits), torch.isneginf(want_max))
    assert torch.allclose(max_logits[finite].double(), want_max[finite], rtol=1e-5, atol=1e-4)


# The sink inside the kernel's epilogue (split rows: in the merge) at 16 heads, at 64 and 128 (the
# 64-head CTA from T x H = 1024), at head counts run padded (8, 9), and on rows of more than
# MAX_TOPK_PER_CALL indices (chunks merged with the sink in the denominator).
@pytest.mark.parametrize("s_q,h_q,topk,pages", [(5, 16, 512, 64), (16, 64, 2048, 64),
                                                (8, 128, 2048, 64), (5, 8, 512, 64),
                                                (3, 9, 4100, 128)])
def test_attention_sink_and_topk_length_match_the_reference(torch, gpu, s_q, h_q, topk, pages):
    q, kv, indices, _ = flashmla_inputs(torch, s_q, h_q=h_q, pages=pages, topk=topk, device=gpu,
                                        seed=9 + h_q)
    sink = torch.randn(h_q, device=gpu)
    sink[0], sink[1] = math.inf, -math.inf
    lengths = torch.randint(2, topk + 1, (s_q,), dtype=torch.int32).to(gpu)
    lengths[0], lengths[1] = topk, 0
    if s_q > 2:
        lengths[2] = 1
    out, max_logits, lse = compat.flash_mla_sparse_fwd(q, kv, indices, CONTEST_SM_SCALE,
                                                       attn_sink=sink, topk_length=lengths)
    want_out, want_max, want_lse = flashmla_reference(torch, q, kv, indices, CONTEST_SM_SCALE,
                                                      sink, lengths)
    assert tuple(out.shape) == (s_q, h_q, 512) and out.is_contiguous()
    assert_contest_close(torch, out, want_out, "out")
    assert bool((out[:, 0] == 0).all()) and bool(torch.isposinf(lse[1]).all())
    finite = torch.isfinite(want_lse)
    assert torch.allclose(lse[finite].double(), want_lse[finite], rtol=1e-5, atol=1e-4)
    assert torch.allclose(max_logits[finite].double(), want_max[finite], rtol=1e-5, atol=1e-4)


def test_skipping_max_logits_and_an_empty_batch(torch, gpu):
    q, kv, indices, _ = flashmla_inputs(torch, 4, pages=16, topk=64, device=gpu)
    out, max_logits, lse = compat.flash_mla_sparse_fwd(q, kv, indices, 0.1,
                                                       return_max_logits=False)
    assert max_logits is None and tuple(out.shape) == (4, 16, 512) and tuple(lse.shape) == (4, 16)
    out, max_logits, lse = compat.flash_mla_sparse_fwd(q[:0], kv, indices[:0], 0.1)
    assert tuple(out.shape) == (0, 16, 512) and tuple(max_logits.shape) == (0, 16)
    assert tuple(lse.shape) == (0, 16)
