"""mlakit.compat as a drop-in for FlashMLA's dense decode in an engine's existing call.

`decode_attention` below is written against FlashMLA's API (`flash_mla.get_mla_metadata`,
`flash_mla.flash_mla_with_kvcache`): the only change an engine makes is the import. It runs the
same call on a paged cache with per-request lengths and checks it against plain PyTorch. Needs
PyTorch and an sm_90 GPU (pip install 'mlakit[torch]'); says why and exits 0 elsewhere.

    python examples/flashmla_dropin.py
"""

import math
import sys


def missing():
    """Why this example cannot run here, or None."""
    try:
        import torch
    except ImportError:
        return "PyTorch is not installed (pip install 'mlakit[torch]')"
    if not torch.cuda.is_available():
        return "no CUDA device visible"
    if torch.cuda.get_device_capability() != (9, 0):
        return f"needs an sm_90 GPU (Hopper), found {torch.cuda.get_device_name()}"
    return None


def decode_attention(q, k_cache, block_table, cache_seqlens, sm_scale):
    """An engine's decode step as written for FlashMLA; the import is the swap."""
    # was: from flash_mla import get_mla_metadata, flash_mla_with_kvcache
    from mlakit.compat import flash_mla_with_kvcache, get_mla_metadata

    s_q, h_q = q.shape[1], q.shape[2]
    tile_scheduler_metadata, num_splits = get_mla_metadata(cache_seqlens, s_q * h_q, 1)
    return flash_mla_with_kvcache(q, k_cache, block_table, cache_seqlens, 512,
                                  tile_scheduler_metadata, num_splits, softmax_scale=sm_scale,
                                  causal=True)


def reference(q, k_cache, block_table, cache_seqlens, sm_scale):
    """FlashMLA's conventions: out [b, s_q, h, 512], natural-log lse [b, h, s_q]."""
    import torch
    b, s_q, h, _ = q.shape
    page_size = k_cache.shape[1]
    out = torch.zeros(b, s_q, h, 512, device=q.device)
    lse = torch.full((b, h, s_q), math.inf, device=q.device)
    for i in range(b):
        n = int(cache_seqlens[i])
        pages = block_table[i, : (n + page_size - 1) // page_size].long()
        k = k_cache[pages].reshape(-1, 576)[:n].float()          # [n, 576]
        for j in range(s_q):
            seen = n - (s_q - 1 - j)                             # causal: speculative tokens
            if seen <= 0:
                continue
            s = (q[i, j].float() @ k[:seen].T) * sm_scale       # [h, seen]
            out[i, j] = torch.softmax(s, dim=-1) @ k[:seen, :512]
            lse[i, :, j] = torch.logsumexp(s, dim=-1)
    return out, lse


def main():
    reason = missing()
    if reason:
        print(f"skipped: {reason}")
        return 0
    import torch

    torch.manual_seed(0)
    dev = "cuda"
    b, s_q, h_q, page_size, max_pages = 4, 2, 16, 64, 32
    sm_scale = 1.0 / math.sqrt(576)
    num_pages = b * max_pages
    k_cache = torch.randn(num_pages, page_size, 1, 576, device=dev).to(torch.bfloat16)
    block_table = torch.randperm(num_pages, device=dev).int().view(b, max_pages)
    cache_seqlens = torch.tensor([1, 700, 2048, 1500], dtype=torch.int32, device=dev)
    q = torch.randn(b, s_q, h_q, 576, device=dev).to(torch.bfloat16)

    out, lse = decode_attention(q, k_cache, block_table, cache_seqlens, sm_scale)
    ref_out, ref_lse = reference(q, k_cache, block_table, cache_seqlens, sm_scale)
    err = (out.float() - ref_out).abs().max().item()
    finite = torch.isfinite(ref_lse)
    lse_err = (lse[finite] - ref_lse[finite]).abs().max().item()
    same_inf = bool((torch.isinf(lse) == ~finite).all())
    print(f"flash_mla_with_kvcache (mlakit.compat): out {tuple(out.shape)} max |err| {err:.2e}, "
          f"lse {tuple(lse.shape)} max |err| {lse_err:.2e}")
    ok = err < 2e-2 and lse_err < 1e-2 and same_inf
    print("ok" if ok else "MISMATCH against the PyTorch reference")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
