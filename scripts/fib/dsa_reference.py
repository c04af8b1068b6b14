"""Reference of the DSA sparse-attention definitions, as flashinfer-bench runs it.

scripts/fib/traceset.py embeds this file verbatim as the `reference` of the definitions
dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64 / _ps1 it writes. The harness calls
`run(q_nope, q_pe, ckv_cache, kpe_cache, sparse_indices, sm_scale)` on its own inputs and compares
every solution's (output, lse) with what this returns (docs/flashinfer-bench.md).

Semantics (docs/dsa-contract.md): per token t and head h, over the valid entries j of
sparse_indices[t] (0 <= j < num_pages * page_size; -1 is padding, anywhere in the row),
    s_j = sm_scale * (q_nope[t, h] . ckv[j] + q_pe[t, h] . kpe[j])      in fp32
    lse[t, h] = log2(sum_j exp(s_j))                                     base 2
    output[t, h] = sum_j softmax(s)_j * ckv[j]                           rounded to bf16
An empty row gives output 0 and lse -inf.
"""

import math

import torch

_TOKENS_PER_CHUNK = 16  # bounds the gathered fp32 rows: 16 x 2048 x 576 x 4 B = 75 MB


@torch.no_grad()
def run(q_nope, q_pe, ckv_cache, kpe_cache, sparse_indices, sm_scale):
    num_tokens, num_heads, head_dim_ckv = q_nope.shape
    head_dim_kpe = q_pe.shape[-1]
    num_slots = ckv_cache.shape[0] * ckv_cache.shape[1]
    ckv = ckv_cache.reshape(num_slots, head_dim_ckv)
    kpe = kpe_cache.reshape(num_slots, head_dim_kpe)
    scale = float(sm_scale)
    device = q_nope.device

    output = torch.zeros((num_tokens, num_heads, head_dim_ckv), dtype=torch.bfloat16, device=device)
    lse = torch.full((num_tokens, num_heads), -math.inf, dtype=torch.float32, device=device)
    for t0 in range(0, num_tokens, _TOKENS_PER_CHUNK):
        t1 = min(t0 + _TOKENS_PER_CHUNK, num_tokens)
        idx = sparse_indices[t0:t1].to(torch.int64)                    # [c, topk]
        valid = (idx >= 0) & (idx < num_slots)
        safe = torch.where(valid, idx, torch.zeros_like(idx))
        k_ckv = ckv[safe].to(torch.float32)                             # [c, topk, 512]
        k_kpe = kpe[safe].to(torch.float32)                             # [c, topk, 64]
        logits = torch.einsum("chd,ckd->chk", q_nope[t0:t1].to(torch.float32), k_ckv)
        logits += torch.einsum("chd,ckd->chk", q_pe[t0:t1].to(torch.float32), k_kpe)
        logits *= scale
        logits.masked_fill_(~valid[:, None, :], -math.inf)              # [c, H, topk]
        lse_e = torch.logsumexp(logits, dim=-1)                         # [c, H], natural log
        nonempty = torch.isfinite(lse_e)[..., None]
        probs = torch.where(nonempty, torch.exp(logits - lse_e[..., None]),
                            torch.zeros_like(logits))
        output[t0:t1] = torch.einsum("chk,ckd->chd", probs, k_ckv).to(torch.bfloat16)
        lse[t0:t1] = lse_e / math.log(2.0)
    return output, lse
