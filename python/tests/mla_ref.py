"""Inputs and the fp64 reference of mla_decode for the binding's tests (dsa_ref.py holds the
contest's comparison rule). Plain functions taking the torch module, so that this file imports
without torch."""

import math

CKV, KPE = 512, 64
D_QK = CKV + KPE
# Page ids that do not exist, written into block_table past each request's pages: the kernel must
# never read those entries.
JUNK_PAGE_IDS = (-1, 2**31 - 1)


def pages_for(n, page_size):
    return -(-max(n, 0) // page_size)


def make_mla_inputs(torch, seqlens, *, seq_q=1, heads=16, page_size=64, spare_pages=3,
                    num_pages=None, max_pages=None, device="cuda", seed=0):
    """Fresh random inputs in the engines' combined layouts, as a dict:

    * ``q`` bf16 [b, s_q, h, 576] (randn);
    * ``cache`` bf16 [num_pages, page_size, 576]: randn in the rows the requests hold, NaN in
      every other row (pages no request uses, and the tail of each request's last page);
    * ``block_table`` int32 [b, max_pages]: each request's pages drawn from a random permutation
      (so never in order), entries past its pages hold ids that do not exist;
    * ``cache_seqlens`` int32 [b] = ``seqlens`` as given (max_pages defaults to what the largest
      needs; a smaller one makes larger seqlens out of range, clamped by the contract).

    num_pages defaults to the pages the requests use plus ``spare_pages``; give it (and
    max_pages) to get the same shapes for other seqlens (CUDA graphs).
    """
    g = torch.Generator(device="cpu").manual_seed(seed)
    batch = len(seqlens)
    if max_pages is None:
        max_pages = max([pages_for(n, page_size) for n in seqlens] + [1])
    held = [min(max(n, 0), max_pages * page_size) for n in seqlens]
    used_pages = sum(pages_for(n, page_size) for n in held)
    if num_pages is None:
        num_pages = used_pages + spare_pages
    assert num_pages >= used_pages, (num_pages, used_pages)
    order = torch.randperm(num_pages, generator=g).tolist()
    q = torch.randn(batch, seq_q, heads, D_QK, generator=g).to(torch.bfloat16)
    cache = torch.full((num_pages, page_size, D_QK), math.nan, dtype=torch.bfloat16)
    table = torch.empty(batch, max_pages, dtype=torch.int32)
    k = 0
    for i, n in enumerate(held):
        for p in range(max_pages):
            if p < pages_for(n, page_size):
                page = order[k]
                k += 1
                rows = min(page_size, n - p * page_size)
                cache[page, :rows] = torch.randn(rows, D_QK, generator=g).to(torch.bfloat16)
                table[i, p] = page
            else:
                table[i, p] = JUNK_PAGE_IDS[(i + p) % 2]
    seqlens_t = torch.tensor(list(seqlens), dtype=torch.int32).reshape(batch)
    return {"q": q.to(device), "cache": cache.to(device), "block_table": table.to(device),
            "cache_seqlens": seqlens_t.to(device)}


def separate(torch, inputs):
    """(q_nope, q_pe, ckv_cache, kpe_cache) as four contiguous tensors holding the values of the
    combined q and cache."""
    q, cache = inputs["q"], inputs["cache"]
    return (q[..., :CKV].contiguous(), q[..., CKV:].contiguous(), cache[..., :CKV].contiguous(),
            cache[..., CKV:].contiguous())


def mla_reference(torch, q, cache, block_table, cache_seqlens, sm_scale, causal):
    """mla_decode's definition (include/mlakit/mla.h) in fp64 on q's device, from the combined q
    [b, s_q, h, 576] and cache [num_pages, page_size, 576]: (output [b, s_q, h, 512],
    lse [b, s_q, h] base 2). n = clamp(seqlen, 0, max_pages * page_size); query i sees
    n - (s_q - 1 - i) rows when causal, n otherwise; a query that sees none gets 0 and -inf."""
    batch, seq_q, heads, _ = q.shape
    page_size = cache.shape[1]
    max_pages = block_table.shape[1]
    dev = q.device
    out = torch.zeros(batch, seq_q, heads, CKV, dtype=torch.float64, device=dev)
    lse = torch.full((batch, seq_q, heads), -math.inf, dtype=torch.float64, device=dev)
    seqlens, table = cache_seqlens.tolist(), block_table.tolist()
    for b in range(batch):
        n = min(max(seqlens[b], 0), max_pages * page_size)
        if n == 0:
            continue
        pages = torch.tensor(table[b][:pages_for(n, page_size)], dtype=torch.long, device=dev)
        rows = cache[pages].reshape(-1, D_QK)[:n].double()                      # [n, 576]
        scores = torch.einsum("shd,nd->shn", q[b].double(), rows) * sm_scale  # [s_q, h, n]
        offsets = torch.arange(seq_q, device=dev)
        visible = n - (seq_q - 1 - offsets) if causal else torch.full_like(offsets, n)
        hidden = torch.arange(n, device=dev)[None, :] >= visible[:, None]       # [s_q, n]
        scores.masked_fill_(hidden[:, None, :], -math.inf)
        lse_b = torch.logsumexp(scores, dim=-1)                                 # [s_q, h]
        probs = torch.exp(scores - lse_b[..., None]).nan_to_num(0.0)
        out[b] = probs @ rows[:, :CKV]
        lse[b] = lse_b / math.log(2.0)
    return out, lse
