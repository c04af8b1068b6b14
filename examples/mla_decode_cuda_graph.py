"""Dense paged MLA decode captured in a CUDA graph and replayed on new inputs.

`mlakit.mla_decode` launches on the current stream; a call made while that stream is captured
takes its workspace from the graph's private pool (docs/python.md, "Workspace and CUDA graphs"),
so no warm-up call is needed. Replays read whatever the static buffers hold at replay time; each
is checked against an eager call on the same inputs. Needs PyTorch and an sm_90 GPU
(pip install 'mlakit[torch]'); says why and exits 0 elsewhere.

    python examples/mla_decode_cuda_graph.py
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


def main():
    reason = missing()
    if reason:
        print(f"skipped: {reason}")
        return 0
    import torch
    import mlakit

    torch.manual_seed(0)
    dev = "cuda"
    b, s_q, heads, page_size, max_pages = 8, 1, 16, 64, 16
    num_pages = b * max_pages
    sm_scale = 1.0 / math.sqrt(576)

    # Static buffers: the graph reads and writes these addresses on every replay.
    q = torch.empty(b, s_q, heads, 576, device=dev, dtype=torch.bfloat16)
    kv_cache = torch.randn(num_pages, page_size, 576, device=dev).to(torch.bfloat16)
    block_table = torch.arange(num_pages, device=dev, dtype=torch.int32).view(b, max_pages)
    cache_seqlens = torch.empty(b, device=dev, dtype=torch.int32)
    out = torch.empty(b, s_q, heads, 512, device=dev, dtype=torch.bfloat16)
    lse = torch.empty(b, s_q, heads, device=dev, dtype=torch.float32)

    def step():
        mlakit.mla_decode(q, None, kv_cache, None, block_table, cache_seqlens, sm_scale,
                          out=out, lse=lse)

    def new_inputs():
        q.copy_(torch.randn_like(q, dtype=torch.float32))
        cache_seqlens.copy_(torch.randint(1, max_pages * page_size + 1, (b,), device=dev))

    new_inputs()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()

    worst = 0.0
    for replay in range(3):
        new_inputs()
        graph.replay()
        torch.cuda.synchronize()
        eager_out, eager_lse = mlakit.mla_decode(q, None, kv_cache, None, block_table,
                                                 cache_seqlens, sm_scale)
        diff = max((out.float() - eager_out.float()).abs().max().item(),
                   (lse - eager_lse).abs().max().item())
        worst = max(worst, diff)
        print(f"replay {replay}: lengths {cache_seqlens.tolist()}, max |graph - eager| {diff:.2e}")
    ok = worst == 0.0  # the same kernel on the same inputs: bitwise equal
    print("ok" if ok else "MISMATCH between the graph's replays and eager calls")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
