"""The binding on an sm_90 GPU: numeric spot checks against the fp64 reference (the numeric sweep
lives in the C++ GPU tests), outputs written in place, the current stream, CUDA graphs,
torch.compile, torch.ops, the checked mode and the flashinfer-bench entries."""

import os

import pytest

import mlakit
import mlakit.flashinfer_bench as fib
from dsa_ref import (CASES, CONTEST_SM_SCALE, assert_contest_close, make_inputs, mark_index_edge_cases,
                     reference, run_python)


def check(torch, inputs, out, lse, sm_scale=CONTEST_SM_SCALE):
    torch.cuda.synchronize()
    want_out, want_lse = reference(torch, *inputs, sm_scale)
    assert_contest_close(torch, out, want_out, "output")
    assert_contest_close(torch, lse, want_lse, "lse")


def empty_outputs(torch, num_tokens, device, heads=16):
    """Outputs poisoned with NaN, so that an element the kernel does not write fails."""
    out = torch.full((num_tokens, heads, 512), float("nan"), dtype=torch.bfloat16, device=device)
    lse = torch.full((num_tokens, heads), float("nan"), dtype=torch.float32, device=device)
    return out, lse


@pytest.mark.parametrize("case", list(CASES))
def test_matches_reference(torch, gpu, case):
    inputs = make_inputs(torch, device=gpu, seed=len(case), **CASES[case])
    out, lse = mlakit.dsa_sparse_attention(*inputs, CONTEST_SM_SCALE)
    check(torch, inputs, out, lse)


def test_padding_anywhere_repeats_and_invalid_indices(torch, gpu):
    q_nope, q_pe, ckv, kpe, idx = make_inputs(torch, 4, device=gpu, seed=3)
    mark_index_edge_cases(idx, num_slots=ckv.shape[0] * ckv.shape[1])
    inputs = (q_nope, q_pe, ckv, kpe, idx)
    out, lse = mlakit.dsa_sparse_attention(*inputs, CONTEST_SM_SCALE)
    check(torch, inputs, out, lse)


def test_sm_scale_is_a_runtime_value(torch, gpu):
    inputs = make_inputs(torch, 2, device=gpu, seed=5)
    out, lse = mlakit.dsa_sparse_attention(*inputs, 0.05)
    check(torch, inputs, out, lse, sm_scale=0.05)


def test_strided_views_the_contract_allows(torch, gpu):
    """q_nope/q_pe as views of one [T, 16, 576] buffer, the caches as views of one
    [pages, 64, 576] buffer (slot stride 576), the indices as a column slice."""
    T = 3
    q_nope, q_pe, ckv, kpe, idx = make_inputs(torch, T, device=gpu, seed=6)
    q = torch.cat([q_nope, q_pe], dim=-1)
    kv = torch.cat([ckv, kpe], dim=-1)
    wide_idx = torch.full((T, 4096), -1, dtype=torch.int32, device=gpu)
    wide_idx[:, :2048] = idx
    views = (q[..., :512], q[..., 512:], kv[..., :512], kv[..., 512:], wide_idx[:, :2048])
    out, lse = mlakit.dsa_sparse_attention(*views, CONTEST_SM_SCALE)
    check(torch, (q_nope, q_pe, ckv, kpe, idx), out, lse)


def test_wide_rows_read_index_views_and_any_topk(torch, gpu):
    """At 128 heads and T = 5..8 the default runs 64 heads per CTA on wgmma (h64; pooled rows, b1,
    before it: their binding-level check ended with that default, tests/gpu keeps their kernel
    checks): each CTA compacts its index row into the workspace. The rows as a column slice of a
    wider buffer (a row stride past topk), and a topk that is not a multiple of 4."""
    for T, topk, valid in ((5, 2048, [2048, 3, 0, 700, 64]), (8, 2047, [9, 2047, 1, 212, 11, 25, 0, 50])):
        assert mlakit.plan_info(T, 128, topk=topk, device=gpu.index, num_heads=128)["tiling"].endswith("h64")
        inputs = make_inputs(torch, T, num_pages=128, topk=topk, device=gpu, seed=60 + T, valid=valid, heads=128)
        wide = torch.full((T, 4096), -1, dtype=torch.int32, device=gpu)
        wide[:, :topk] = inputs[4]
        out, lse = mlakit.dsa_sparse_attention(*inputs[:4], wide[:, :topk], CONTEST_SM_SCALE)
        check(torch, inputs, out, lse)


def test_outputs_are_written_in_place(torch, gpu):
    inputs = make_inputs(torch, 3, device=gpu, seed=7)
    out, lse = empty_outputs(torch, 3, gpu)
    pointers = (out.data_ptr(), lse.data_ptr())
    got_out, got_lse = mlakit.dsa_sparse_attention(*inputs, CONTEST_SM_SCALE, out=out, lse=lse)
    assert got_out is out and got_lse is lse
    assert (got_out.data_ptr(), got_lse.data_ptr()) == pointers
    check(torch, inputs, out, lse)


def test_missing_outputs_are_allocated(torch, gpu):
    inputs = make_inputs(torch, 2, device=gpu, seed=8)
    out, lse = mlakit.dsa_sparse_attention(*inputs, CONTEST_SM_SCALE)
    assert out.shape == (2, 16, 512) and out.dtype == torch.bfloat16 and out.device == gpu
    assert lse.shape == (2, 16) and lse.dtype == torch.float32 and lse.device == gpu
    given_out, _ = empty_outputs(torch, 2, gpu)
    out2, lse2 = mlakit.dsa_sparse_attention(*inputs, CONTEST_SM_SCALE, out=given_out)
    assert out2 is given_out and lse2.shape == (2, 16)
    check(torch, inputs, out2, lse2)


def test_zero_tokens_return_empty_outputs(torch, gpu):
    inputs = make_inputs(torch, 0, device=gpu)
    out, lse = mlakit.dsa_sparse_attention(*inputs, CONTEST_SM_SCALE)
    assert out.shape == (0, 16, 512) and lse.shape == (0, 16)


def test_a_preallocated_call_allocates_nothing(torch, gpu):
    inputs = make_inputs(torch, 4, device=gpu, seed=9)
    out, lse = empty_outputs(torch, 4, gpu)
    mlakit.dsa_sparse_attention(*inputs, CONTEST_SM_SCALE, out=out, lse=lse)  # plan + workspace
    torch.cuda.synchronize()
    allocated, stats = torch.cuda.memory_allocated(gpu), mlakit._C.cache_stats()
    for _ in range(20):
        mlakit.dsa_sparse_attention(*inputs, CONTEST_SM_SCALE, out=out, lse=lse)
    torch.cuda.synchronize()
    assert torch.cuda.memory_allocated(gpu) == allocated
    assert mlakit._C.cache_stats() == stats


def test_runs_on_the_current_stream(torch, gpu):
    """The inputs are written on a side stream behind a long sleep: a launch on any other
    stream would read them before they exist."""
    q_nope, q_pe, ckv, kpe, idx = make_inputs(torch, 2, device=gpu, seed=10)
    late_q = torch.zeros_like(q_nope)
    out, lse = empty_outputs(torch, 2, gpu)
    torch.cuda.synchronize()
    side = torch.cuda.Stream(device=gpu)
    with torch.cuda.stream(side):
        torch.cuda._sleep(100_000_000)  # ~50 ms of spinning at H200 clocks
        late_q.copy_(q_nope)
        mlakit.dsa_sparse_attention(late_q, q_pe, ckv, kpe, idx, CONTEST_SM_SCALE, out=out,
                                    lse=lse)
    side.synchronize()
    check(torch, (q_nope, q_pe, ckv, kpe, idx), out, lse)


def test_concurrent_streams_keep_separate_workspaces(torch, gpu):
    """Calls on two streams overlap on the GPU: each (device, stream) has its own workspace."""
    a = make_inputs(torch, 8, device=gpu, seed=28)
    b = make_inputs(torch, 8, device=gpu, seed=29)
    out_a, lse_a = empty_outputs(torch, 8, gpu)
    out_b, lse_b = empty_outputs(torch, 8, gpu)
    torch.cuda.synchronize()
    streams = torch.cuda.Stream(device=gpu), torch.cuda.Stream(device=gpu)
    for _ in range(20):
        with torch.cuda.stream(streams[0]):
            mlakit.dsa_sparse_attention(*a, CONTEST_SM_SCALE, out=out_a, lse=lse_a)
        with torch.cuda.stream(streams[1]):
            mlakit.dsa_sparse_attention(*b, CONTEST_SM_SCALE, out=out_b, lse=lse_b)
    check(torch, a, out_a, lse_a)
    check(torch, b, out_b, lse_b)
    if mlakit.plan_info(8, 64, device=gpu.index)["workspace_bytes"] > 0:
        assert mlakit._C.cache_stats()["workspaces"] >= 2


def test_cuda_graph_replays_new_input_values(torch, gpu):
    """The default (single-launch) kernel: rows split over CTAs that merge in the kernel through
    counters in the workspace, which every call must leave at zero for the next replay."""
    assert mlakit.plan_info(4, 64, device=gpu.index)["kernel_key"] == "dsa_decode.v2_fused.bf16"
    replay_on_fresh_inputs(torch, gpu, 4, 16, 11,
                           ((12, [2048, 7, 0, 1500]), (13, [5, 2048, 2048, 0]), (19, [1, 64, 65, 1999])))


def test_cuda_graph_of_wide_rows_replays_new_input_values(torch, gpu):
    """128 heads, T = 6: the default runs 64 heads per CTA (h64), each row split by its own valid
    count, so which CTAs work, merge or leave, and the compacted slots each CTA keeps in the
    workspace, change with the valid counts of every replay."""
    assert mlakit.plan_info(6, 64, device=gpu.index, num_heads=128)["tiling"].endswith("h64")
    replay_on_fresh_inputs(torch, gpu, 6, 128, 51, ((52, [2048, 3, 0, 700, 64, 9]), (53, [1, 2, 2048, 2048, 0, 33]),
                                                     (54, [0, 0, 0, 0, 0, 2048])))


def replay_on_fresh_inputs(torch, gpu, num_tokens, heads, seed, rounds):
    """Captures one call on inputs of `seed`, then per (seed, valid) of `rounds` copies fresh
    inputs into the captured buffers, poisons the outputs and checks the replay."""
    static = make_inputs(torch, num_tokens, device=gpu, seed=seed, heads=heads)
    out, lse = empty_outputs(torch, num_tokens, gpu, heads)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        mlakit.dsa_sparse_attention(*static, CONTEST_SM_SCALE, out=out, lse=lse)
    for fresh_seed, valid in rounds:
        fresh = make_inputs(torch, num_tokens, device=gpu, seed=fresh_seed, heads=heads, valid=valid)
        for dst, src in zip(static, fresh):
            dst.copy_(src)
        out.fill_(float("nan"))
        lse.fill_(float("nan"))
        graph.replay()
        check(torch, fresh, out, lse)


def test_one_cached_workspace_serves_every_shape(torch, gpu):
    """The binding's workspace is cached per stream and reused for every shape: a larger T splits
    its rows in a layout whose counters must not land on an earlier call's partials (the
    flashinfer-bench harness ran T = 16, 32, 64 in this order on one stream and caught it)."""
    for num_tokens in (16, 32, 64, 8, 64, 2):
        inputs = make_inputs(torch, num_tokens, num_pages=num_tokens * 33, device=gpu, seed=num_tokens)
        out, lse = empty_outputs(torch, num_tokens, gpu)
        mlakit.dsa_sparse_attention(*inputs, CONTEST_SM_SCALE, out=out, lse=lse)
        check(torch, inputs, out, lse)


def test_cuda_graph_of_the_allocating_form(torch, gpu):
    static = make_inputs(torch, 2, device=gpu, seed=14)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out, lse = mlakit.dsa_sparse_attention(*static, CONTEST_SM_SCALE)
    fresh = make_inputs(torch, 2, device=gpu, seed=15)
    for dst, src in zip(static, fresh):
        dst.copy_(src)
    graph.replay()
    check(torch, fresh, out, lse)


def test_a_graph_owns_its_workspace(torch, gpu):
    """Captured first (a shape never planned before), then eager calls grow and free the cached
    workspaces: the graph still replays correctly."""
    static = make_inputs(torch, 3, num_pages=32, device=gpu, seed=16)
    out, lse = empty_outputs(torch, 3, gpu)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        mlakit.dsa_sparse_attention(*static, CONTEST_SM_SCALE, out=out, lse=lse)
    big = make_inputs(torch, 64, num_pages=32, device=gpu, seed=17)
    mlakit.dsa_sparse_attention(*big, CONTEST_SM_SCALE)
    mlakit.empty_cache()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    mlakit.dsa_sparse_attention(*big, CONTEST_SM_SCALE)  # reuses freed memory, if any
    fresh = make_inputs(torch, 3, num_pages=32, device=gpu, seed=18)
    for dst, src in zip(static, fresh):
        dst.copy_(src)
    graph.replay()
    check(torch, fresh, out, lse)


def test_torch_ops_match_the_direct_call(torch, gpu):
    inputs = make_inputs(torch, 3, device=gpu, seed=19)
    out, lse = mlakit.dsa_sparse_attention(*inputs, CONTEST_SM_SCALE)
    op_out, op_lse = torch.ops.mlakit.dsa_sparse_attention(*inputs, CONTEST_SM_SCALE)
    dps_out, dps_lse = empty_outputs(torch, 3, gpu)
    torch.ops.mlakit.dsa_sparse_attention_out(*inputs, CONTEST_SM_SCALE, dps_out, dps_lse)
    torch.cuda.synchronize()
    assert torch.equal(op_out, out) and torch.equal(op_lse, lse)
    assert torch.equal(dps_out, out) and torch.equal(dps_lse, lse)


def test_opcheck(torch, gpu):
    inputs = make_inputs(torch, 2, num_pages=16, device=gpu, seed=20)
    torch.library.opcheck(torch.ops.mlakit.dsa_sparse_attention.default,
                          (*inputs, CONTEST_SM_SCALE))
    out, lse = empty_outputs(torch, 2, gpu)
    torch.library.opcheck(torch.ops.mlakit.dsa_sparse_attention_out.default,
                          (*inputs, CONTEST_SM_SCALE, out, lse))


def test_torch_compile_full_graph(torch, gpu):
    def step(q_nope, q_pe, ckv, kpe, idx):
        out, lse = mlakit.dsa_sparse_attention(q_nope, q_pe, ckv, kpe, idx, CONTEST_SM_SCALE)
        return out.float() * 2.0, lse + 1.0

    def step_dps(q_nope, q_pe, ckv, kpe, idx, out, lse):
        mlakit.dsa_sparse_attention(q_nope, q_pe, ckv, kpe, idx, CONTEST_SM_SCALE, out=out,
                                    lse=lse)
        return lse.sum()

    torch._dynamo.reset()
    inputs = make_inputs(torch, 4, device=gpu, seed=21)
    want_out, want_lse = step(*inputs)
    got_out, got_lse = torch.compile(step, fullgraph=True)(*inputs)
    torch.testing.assert_close(got_out, want_out, rtol=0, atol=0)
    torch.testing.assert_close(got_lse, want_lse, rtol=0, atol=0)

    out, lse = empty_outputs(torch, 4, gpu)
    total = torch.compile(step_dps, fullgraph=True)(*inputs, out, lse)
    check(torch, inputs, out, lse)
    torch.testing.assert_close(total, lse.sum())


def test_check_indices(torch, gpu):
    _, _, ckv, _, idx = make_inputs(torch, 3, device=gpu, seed=22, valid=[2048, 5, 0])
    assert mlakit.check_indices(idx, ckv) is None
    num_slots = ckv.shape[0] * ckv.shape[1]
    idx[1, 7] = num_slots
    with pytest.raises(ValueError, match=r"^sparse_indices: 1 entries .* first at \[1, 7\]"):
        mlakit.check_indices(idx, ckv)
    idx[1, 7] = -2
    with pytest.raises(ValueError, match=r"first at \[1, 7\] = -2"):
        mlakit.check_indices(idx, ckv)


def test_unsupported_head_count_is_reported(torch, gpu):
    """8 heads is a valid problem no kernel runs, 24 none at all: both errors name the counts."""
    q_nope, q_pe, ckv, kpe, idx = make_inputs(torch, 2, device=gpu, seed=23, heads=32)
    with pytest.raises(NotImplementedError, match=r"8 heads .*16, 32, 64, 128 heads"):
        mlakit.dsa_sparse_attention(q_nope[:, :8], q_pe[:, :8], ckv, kpe, idx, CONTEST_SM_SCALE)
    with pytest.raises(ValueError, match=r"num_heads.*16, 32, 64, 128.*got 24"):
        mlakit.dsa_sparse_attention(q_nope[:, :24], q_pe[:, :24], ckv, kpe, idx, CONTEST_SM_SCALE)


# 32, 64 and 128 heads (TP 4, TP 2, data-parallel attention): one CTA per 16 heads; split rows,
# one-CTA rows and empty rows, into NaN-poisoned outputs.
@pytest.mark.parametrize("heads", [32, 64, 128])
@pytest.mark.parametrize("case", ["T1-full", "T4-valid-prefixes", "T3-empty-rows", "T5-topk-64"])
def test_every_head_count_matches_reference(torch, gpu, heads, case):
    inputs = make_inputs(torch, device=gpu, seed=heads + len(case), heads=heads, **CASES[case])
    out, lse = empty_outputs(torch, inputs[0].shape[0], gpu, heads)
    mlakit.dsa_sparse_attention(*inputs, CONTEST_SM_SCALE, out=out, lse=lse)
    check(torch, inputs, out, lse)


def test_many_heads_read_strided_views_of_576_wide_buffers(torch, gpu):
    """128 heads: q as views of one [T, 128, 576] buffer, so each head group's queries start
    16 x 576 elements apart; the caches as views of one [pages, 64, 576] buffer."""
    T = 2
    q_nope, q_pe, ckv, kpe, idx = make_inputs(torch, T, device=gpu, seed=40, heads=128, valid=[2048, 77])
    q = torch.cat([q_nope, q_pe], dim=-1)
    kv = torch.cat([ckv, kpe], dim=-1)
    out, lse = empty_outputs(torch, T, gpu, 128)
    mlakit.dsa_sparse_attention(q[..., :512], q[..., 512:], kv[..., :512], kv[..., 512:], idx,
                                CONTEST_SM_SCALE, out=out, lse=lse)
    check(torch, (q_nope, q_pe, ckv, kpe, idx), out, lse)


def test_cuda_graph_of_many_heads_replays_new_input_values(torch, gpu):
    """64 heads, T = 2: each row's 32 splits x 2 CTAs of 32 heads merge through their own
    counters (one per CTA group), left at zero for the next replay."""
    replay_on_fresh_inputs(torch, gpu, 2, 64, 41, ((42, [2048, 0]), (43, [3, 2000])))


def test_plan_info_and_plan_cache(torch, gpu):
    info = mlakit.plan_info(8, 8462, device=gpu.index)
    assert info["kernel_key"].startswith("dsa_decode.") and info["workspace_bytes"] >= 0
    assert "T=8" in info["problem"]
    before = mlakit._C.cache_stats()["plans"]
    inputs = make_inputs(torch, 7, num_pages=8, device=gpu, seed=24)
    mlakit.dsa_sparse_attention(*inputs, CONTEST_SM_SCALE)
    mlakit.dsa_sparse_attention(*inputs, CONTEST_SM_SCALE)
    assert mlakit._C.cache_stats()["plans"] == before + 1


def test_flashinfer_bench_entries(torch, gpu):
    inputs = make_inputs(torch, 2, device=gpu, seed=25)
    scale = torch.tensor(CONTEST_SM_SCALE, dtype=torch.float32)  # harnesses may pass 0-d tensors
    out, lse = fib.run(*inputs, scale)
    check(torch, inputs, out, lse, sm_scale=float(scale))
    out2, lse2 = empty_outputs(torch, 2, gpu)
    assert fib.run_dps(*inputs, float(scale), out2, lse2) is None
    torch.cuda.synchronize()
    assert torch.equal(out2, out) and torch.equal(lse2, lse)


def test_dlpack_fallback_route_and_its_graphs(torch, gpu):
    """Without the DLPack exchange API (older PyTorch), tensors go through __dlpack__ and the
    stream comes from Python: same numbers, and graph capture still works."""
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    code = (
        f"import sys; sys.path.insert(0, {tests_dir!r})\n"
        "import torch, mlakit\n"
        "from dsa_ref import make_inputs, reference, assert_contest_close, CONTEST_SM_SCALE\n"
        "assert mlakit.torch_integration()['exchange_api'] is False\n"
        "static = make_inputs(torch, 3, device='cuda', seed=26)\n"
        "out, lse = mlakit.dsa_sparse_attention(*static, CONTEST_SM_SCALE)\n"
        "assert mlakit._C.describe_tensor(out)['route'] == 'dlpack'\n"
        "g = torch.cuda.CUDAGraph()\n"
        "with torch.cuda.graph(g):\n"
        "    mlakit.dsa_sparse_attention(*static, CONTEST_SM_SCALE, out=out, lse=lse)\n"
        "fresh = make_inputs(torch, 3, device='cuda', seed=27)\n"
        "for d, s in zip(static, fresh): d.copy_(s)\n"
        "g.replay(); torch.cuda.synchronize()\n"
        "want = reference(torch, *fresh, CONTEST_SM_SCALE)\n"
        "assert_contest_close(torch, out, want[0], 'output')\n"
        "assert_contest_close(torch, lse, want[1], 'lse')\n"
        "print('ok')\n")
    proc = run_python(code, {"MLAKIT_NO_DLPACK_EXCHANGE": "1"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("ok")
