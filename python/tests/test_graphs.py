"""CUDA graphs through the binding, as engines replay decode.

A replay runs exactly the device work of the eager call: a captured call's split-row counters live
in a region the graph holds (caches.h, graph_counters), so the capture adds no memset node for
them; checked for every op at every head count, on shapes whose rows split. A replay's outputs are
the eager call's, bitwise, with the outputs poisoned before each replay. Counter regions return
when a graph is destroyed and serve the next captures (more of them than one slab holds).
"""

import math

import pytest

import mlakit
from dsa_ref import CONTEST_SM_SCALE, make_inputs
from mla_ref import make_mla_inputs


def device_work(torch, fn):
    """Names of the device activities (kernels, memsets, copies) `fn` runs, sorted."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return sorted(e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)


def dsa_call(torch, gpu, kv, heads, tokens, seed):
    q_nope, q_pe, ckv, kpe, idx = make_inputs(torch, tokens, num_pages=64, heads=heads, device=gpu,
                                              seed=seed, valid=[2048] + [1000] * (tokens - 1))
    out = torch.empty(tokens, heads, 512, dtype=torch.bfloat16, device=gpu)
    lse = torch.empty(tokens, heads, dtype=torch.float32, device=gpu)
    if kv == "fp8":
        cache = mlakit.quantize_dsa_fp8(ckv, kpe)
        return (lambda: mlakit.dsa_sparse_attention_fp8(q_nope, q_pe, cache, idx, CONTEST_SM_SCALE,
                                                        out=out, lse=lse)), out, lse
    return (lambda: mlakit.dsa_sparse_attention(q_nope, q_pe, ckv, kpe, idx, CONTEST_SM_SCALE,
                                                out=out, lse=lse)), out, lse


def mla_call(torch, gpu, heads, seed):
    inputs = make_mla_inputs(torch, [4000, 1, 300, 2000], seq_q=2, heads=heads, device=gpu,
                             seed=seed)
    out = torch.empty(4, 2, heads, 512, dtype=torch.bfloat16, device=gpu)
    lse = torch.empty(4, 2, heads, dtype=torch.float32, device=gpu)
    return (lambda: mlakit.mla_decode(inputs["q"], None, inputs["cache"], None,
                                      inputs["block_table"], inputs["cache_seqlens"],
                                      CONTEST_SM_SCALE, causal=True, out=out, lse=lse)), out, lse


# Few tokens: rows split over CTAs (the counters are used); at 64 and 128 heads T = 2 runs 16 heads
# per CTA and T = 16 the 64-head CTA.
CALLS = {f"dsa-{kv}-h{h}-t{t}": (lambda torch, gpu, kv=kv, h=h, t=t: dsa_call(torch, gpu, kv, h, t, h + t))
         for kv in ("bf16", "fp8") for h, t in ((16, 4), (32, 4), (64, 2), (64, 16), (128, 2), (128, 16))}
CALLS.update({f"mla-h{h}": (lambda torch, gpu, h=h: mla_call(torch, gpu, h, h)) for h in (16, 64, 128)})


@pytest.mark.parametrize("name", list(CALLS))
def test_a_replay_runs_the_eager_calls_work_and_gives_its_outputs(torch, gpu, name):
    call, out, lse = CALLS[name](torch, gpu)
    call()  # plans and caches the eager workspace: the profiled call allocates nothing
    eager = device_work(torch, call)
    assert eager, "the profiler saw no device work of the eager call: nothing to compare"
    want_out, want_lse = out.clone(), lse.clone()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        call()
    replay = device_work(torch, graph.replay)
    assert replay == eager, f"the replay runs {replay}, the eager call {eager}"
    for _ in range(2):
        out.fill_(math.nan)
        lse.fill_(math.nan)
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(out, want_out) and torch.equal(lse, want_lse)


def test_counter_regions_return_with_their_graphs_and_serve_later_captures(torch, gpu):
    call, out, lse = dsa_call(torch, gpu, "bf16", 16, 4, 7)
    call()
    torch.cuda.synchronize()
    want_out, want_lse = out.clone(), lse.clone()
    kept = []
    for i in range(80):  # more captured calls than a slab's 64 regions
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            call()
        out.fill_(math.nan)
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(out, want_out) and torch.equal(lse, want_lse), f"capture {i}"
        if i % 2:
            kept.append(graph)  # half of them stay alive, half return their regions
        del graph
    for graph in kept:  # the live ones still replay correctly
        out.fill_(math.nan)
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(out, want_out)
