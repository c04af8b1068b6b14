"""scripts/peer_bench.py and scripts/peers/: the span extraction and the CLI without a GPU; the
Triton peer against the harness's torch reference where torch, triton and a GPU are there."""

import importlib.util
import math
from pathlib import Path

import pytest

import peer_bench
from peers import spans

ROOT = Path(__file__).resolve().parents[2]


def _trace(*events):
    return {"traceEvents": [dict(ph="X", cat=c, name=n, ts=ts, dur=dur) for c, n, ts, dur in events]}


def test_spans_cut_the_trace_at_each_flush():
    f = spans.FLUSH_MARK
    trace = _trace(("kernel", f, 0.0, 5.0), ("kernel", "split", 10.0, 4.0), ("kernel", "combine", 16.0, 1.5),
                   ("cpu_op", "aten::empty", 11.0, 100.0), ("kernel", f, 30.0, 5.0), ("kernel", "split", 40.0, 3.0))
    ks = spans.kernels_of_trace(trace)
    assert [k.name for k in ks] == [f, "split", "combine", f, "split"]  # the CPU op is not a kernel
    assert spans.call_spans(ks, 2) == [7.5, 3.0]  # first start to last end, the gap between included


def test_spans_leave_out_the_busy_wait():
    f, b = spans.FLUSH_MARK, spans.BUSY_MARK
    ks = spans.kernels_of_trace(_trace(("kernel", f, 0.0, 5.0), ("kernel", "void at::cuda::" + b + "(long)", 5.0, 100.0),
                                       ("kernel", "split", 105.5, 4.0), ("kernel", "combine", 110.0, 1.0)))
    assert spans.call_spans(ks, 1) == [5.5]
    spans.check_busy_waits(ks, 1)
    with pytest.raises(ValueError, match="expected 2 busy-wait kernels"):
        spans.check_busy_waits(ks, 2)


def test_spans_sort_by_start():
    f = spans.FLUSH_MARK
    ks = spans.kernels_of_trace(_trace(("kernel", "b", 12.0, 1.0), ("kernel", f, 0.0, 1.0),
                                       ("kernel", "a", 10.0, 1.0)))
    assert spans.call_spans(ks, 1) == [3.0]


def test_spans_refuse_a_broken_trace():
    f = spans.FLUSH_MARK
    ks = spans.kernels_of_trace(_trace(("kernel", f, 0.0, 1.0), ("kernel", "a", 2.0, 1.0)))
    with pytest.raises(ValueError, match="expected 2 flushes"):
        spans.call_spans(ks, 2)
    ks = spans.kernels_of_trace(_trace(("kernel", f, 0.0, 1.0), ("kernel", f, 2.0, 1.0), ("kernel", "a", 4.0, 1.0)))
    with pytest.raises(ValueError, match="call 0 of 2 has no kernel"):
        spans.call_spans(ks, 2)


def test_the_busy_wait_outlasts_the_host():
    # 30 us + 4 x the host time, counted at 2 GHz: a 50 us Triton launch gets 230 us of wait.
    assert peer_bench.busy_cycles(50.0) == 460_000
    assert peer_bench.busy_cycles(0.0) == 60_000


def test_the_flush_kernel_carries_the_mark():
    # Triton names a kernel after its function: the flush function must be named FLUSH_MARK.
    text = (ROOT / "scripts" / "peers" / "triton_dsa.py").read_text(encoding="utf-8")
    assert f"def {spans.FLUSH_MARK}(" in text


def test_cli_names_a_bad_implementation(capsys):
    with pytest.raises(SystemExit) as e:
        peer_bench.parse_args(["--impls", "mlakit", "triton-bn16"])
    assert e.value.code == 2
    assert "--impls: unknown implementation 'triton-bn16'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        peer_bench.parse_args(["--iters", "0"])
    with pytest.raises(SystemExit):
        peer_bench.parse_args(["--impls", "mlakit", "mlakit"])


def test_cli_refuses_an_out_file_it_cannot_write(tmp_path, capsys):
    for bad in (tmp_path, tmp_path / "missing" / "peers.jsonl"):
        with pytest.raises(SystemExit) as e:
            peer_bench.parse_args(["--out", str(bad)])
        assert e.value.code == 2
        assert "--out: cannot write" in capsys.readouterr().err
    assert peer_bench.parse_args(["--out", str(tmp_path / "peers.jsonl")]).out == tmp_path / "peers.jsonl"


def test_table_marks_a_failed_workload_and_counts_the_peer_wins():
    rows = [dict(workload="w0", tokens=1, valid_slots=2, mlakit=4.0, triton=8.0),
            dict(workload="w1", tokens=8, valid_slots=100, mlakit=10.0, triton=math.nan),
            dict(workload="w2", tokens=8, valid_slots=100, mlakit=10.0, triton=9.0)]
    text = peer_bench.table("contest", rows, ["mlakit", "triton"])
    assert "| w0 | 1 | 2 | 4.00 | 8.00 | 2.00 |" in text
    assert "| w1 | 8 | 100 | 10.00 | - | - |" in text
    assert "| mean |  |  | 8.00 | 8.50 | 1.06 |" in text
    assert "triton faster than mlakit on 1 of 3 workloads" in text


def test_table_adds_the_best_peer_per_workload():
    rows = [dict(workload="w0", tokens=1, valid_slots=2, mlakit=4.0, a=8.0, b=6.0),
            dict(workload="w1", tokens=8, valid_slots=9, mlakit=10.0, a=9.0, b=math.nan)]
    text = peer_bench.table("serving", rows, ["mlakit", "a", "b"])
    assert "| w0 | 1 | 2 | 4.00 | 8.00 | 6.00 | 6.00 | 2.00 | 1.50 | 1.50 |" in text
    assert "| w1 | 8 | 9 | 10.00 | 9.00 | - | 9.00 | 0.90 | - | 0.90 |" in text
    assert "best peer faster than mlakit on 1 of 2 workloads" in text


def test_the_cli_knows_every_triton_configuration():
    # One list: triton_dsa.py takes its configurations from peers, where the CLI reads them.
    import peers

    text = (ROOT / "scripts" / "peers" / "triton_dsa.py").read_text(encoding="utf-8")
    assert "from peers import TRITON_CONFIGS as CONFIGS" in text
    assert peer_bench.parse_args([]).impls == ["mlakit"] + ["triton-" + c for c in peers.TRITON_CONFIGS]


def test_without_a_gpu_it_says_why_and_exits_0(capsys):
    if peer_bench.missing_requirement(["mlakit"]) is None:
        pytest.skip("this machine can run the bench")
    assert peer_bench.main(["--suites", "contest", "--impls", "mlakit"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("[peer_bench] skipped: ") and out.rstrip().endswith(".")


def _gpu_ready():
    if importlib.util.find_spec("torch") is None or importlib.util.find_spec("triton") is None:
        return False
    import torch
    return torch.cuda.is_available()


@pytest.mark.skipif(not _gpu_ready(), reason="needs torch, triton and a CUDA device")
@pytest.mark.parametrize("config", ["bn64w4", "bn32w4", "bn64w4s"])
def test_triton_peer_matches_the_reference(config):
    import sys

    import torch

    sys.path.insert(0, str(ROOT / "scripts" / "fib"))
    sys.path.insert(0, str(ROOT / "python" / "tests"))
    import dsa_reference
    from dsa_ref import assert_contest_close
    from peers.triton_dsa import TritonSplitK

    g = torch.Generator(device="cuda")
    g.manual_seed(1234 + len(config))
    pages, page_size, topk, T = 40, 64, 2048, 5
    num_slots = pages * page_size
    ckv = torch.randn((pages, page_size, 512), generator=g, device="cuda").to(torch.bfloat16)
    kpe = torch.randn((pages, page_size, 64), generator=g, device="cuda").to(torch.bfloat16)
    q_nope = torch.randn((T, 16, 512), generator=g, device="cuda").to(torch.bfloat16)
    q_pe = torch.randn((T, 16, 64), generator=g, device="cuda").to(torch.bfloat16)
    idx = torch.randint(0, num_slots, (T, topk), generator=g, device="cuda", dtype=torch.int32)
    pad = torch.rand((T, topk), generator=g, device="cuda") < 0.5
    idx[pad] = -1                      # padding anywhere
    idx[1] = -1                        # an empty row
    idx[2, 100] = num_slots            # out of range: padding
    idx[2, 101] = -7
    idx[3, 2047] = 0                   # the last entry, a repeat of slot 0 elsewhere
    idx[3, 0] = 0
    ref_out, ref_lse = dsa_reference.run(q_nope, q_pe, ckv, kpe, idx, 0.1352337788608801)
    out = torch.full_like(ref_out, float("nan"))
    lse = torch.full_like(ref_lse, float("nan"))
    TritonSplitK(config)(q_nope, q_pe, ckv, kpe, idx, 0.1352337788608801, out=out, lse=lse)
    assert_contest_close(torch, out, ref_out, "output")
    assert_contest_close(torch, lse, ref_lse, "lse")
    assert torch.isneginf(lse[1]).all() and (out[1] == 0).all()
    # The check itself can fail: one element moved past the rule's tolerance is caught.
    out[0, 0, 0] += 1.0
    with pytest.raises(AssertionError, match="output: 1 of"):
        assert_contest_close(torch, out, ref_out, "output")
