"""One DeepSeek-V3.2 sparse-attention (DSA) decode step on an engine's tensors.

An engine (vLLM, SGLang) keeps the latent cache as one paged buffer of 576-wide rows (512 latent,
then 64 rope key) and the query the same way; the indexer hands over the top-k picks as flat slots
(page * page_size + offset, -1 for padding). mlakit reads all of them as views, nothing copied:

    out, lse = mlakit.dsa_sparse_attention(q[..., :512], q[..., 512:],
                                           kv_cache[..., :512], kv_cache[..., 512:],
                                           indices, sm_scale)

The same step on DeepSeek-V3.2's FP8 cache (656-byte rows) is one quantize and one call. Checked
against a plain PyTorch computation. Needs PyTorch and an sm_90 GPU (pip install 'mlakit[torch]');
says why and exits 0 elsewhere.

    python examples/dsa_decode_step.py
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


def reference(q, kv_cache, indices, sm_scale):
    """out [T, H, 512] and base-2 lse [T, H] in fp32, over each row's valid slots."""
    import torch
    rows = kv_cache.reshape(-1, 576).float()
    out = torch.zeros(q.shape[0], q.shape[1], 512, device=q.device)
    lse = torch.full(q.shape[:2], -math.inf, device=q.device)
    for t in range(q.shape[0]):
        slots = indices[t][(indices[t] >= 0) & (indices[t] < rows.shape[0])].long()
        if slots.numel() == 0:
            continue
        k = rows[slots]                                    # [n, 576]
        s = (q[t].float() @ k.T) * sm_scale               # [H, n]
        out[t] = torch.softmax(s, dim=-1) @ k[:, :512]
        lse[t] = torch.logsumexp(s, dim=-1) / math.log(2.0)
    return out, lse


def main():
    reason = missing()
    if reason:
        print(f"skipped: {reason}")
        return 0
    import torch
    import mlakit

    torch.manual_seed(0)
    dev = "cuda"
    tokens, heads, topk, page_size, num_pages = 4, 16, 2048, 64, 96
    sm_scale = 1.0 / math.sqrt(576)

    # The engine's tensors: a paged combined cache, a combined query, flat top-k slots.
    kv_cache = torch.randn(num_pages, page_size, 576, device=dev).to(torch.bfloat16)
    q = torch.randn(tokens, heads, 576, device=dev).to(torch.bfloat16)
    slots = num_pages * page_size
    indices = torch.stack([torch.randperm(slots, device=dev)[:topk] for _ in range(tokens)]).int()
    indices[1, 1000:] = -1  # a shorter row: padding may sit anywhere

    out, lse = mlakit.dsa_sparse_attention(q[..., :512], q[..., 512:], kv_cache[..., :512],
                                           kv_cache[..., 512:], indices, sm_scale)
    ref_out, ref_lse = reference(q, kv_cache, indices, sm_scale)
    err = (out.float() - ref_out).abs().max().item()
    lse_err = (lse - ref_lse).abs().max().item()
    print(f"bf16 cache: out {tuple(out.shape)} max |err| {err:.2e}, lse max |err| {lse_err:.2e}")

    # DeepSeek-V3.2's FP8 cache: quantized on the GPU, read by the FP8 kernel; the reference reads
    # the dequantized cache, so the two see the same values.
    fp8_cache = mlakit.quantize_dsa_fp8(kv_cache)            # uint8 [num_pages, page_size, 656]
    out8, lse8 = mlakit.dsa_sparse_attention_fp8(q[..., :512], q[..., 512:], fp8_cache, indices,
                                                 sm_scale)
    ckv8, kpe8 = mlakit.dequantize_dsa_fp8(fp8_cache)        # the values the kernel reads
    ref8_out, ref8_lse = reference(q, torch.cat([ckv8, kpe8], dim=-1), indices, sm_scale)
    err8 = (out8.float() - ref8_out).abs().max().item()
    lse8_err = (lse8 - ref8_lse).abs().max().item()
    print(f"fp8 cache:  out {tuple(out8.shape)} max |err| {err8:.2e}, lse max |err| {lse8_err:.2e}")

    ok = err < 2e-2 and lse_err < 1e-2 and err8 < 2e-2 and lse8_err < 1e-2
    print("ok" if ok else "MISMATCH against the PyTorch reference")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
