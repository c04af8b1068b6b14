"""The flashinfer-bench trace set writer (scripts/fib/traceset.py) and its synthesis port.

CPU only, standard library: the files are checked against the harness's schema rules and read
back with a small safetensors reader. Where flashinfer-bench (and PyTorch) are importable, its own
loader reads the trace set too; where PyTorch is, the definition's reference is checked against
the binding tests' fp64 reference. tests/cpu/test_fib_traceset.cpp checks that the indices equal
the C++ suites'.
"""

import ast
import json
import math
import struct
import sys
from array import array
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "fib"))

import synth  # noqa: E402
import traceset  # noqa: E402

PS64, PS1 = traceset.DEFINITIONS["ps64"][0], traceset.DEFINITIONS["ps1"][0]
CONTEST = json.loads((ROOT / "data" / "workloads" / "dsa_contest.json").read_text())


def read_safetensors(path):
    """{name: (dtype, shape, bytes)}, checking offsets against the file like a strict reader."""
    data = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    assert (8 + n) % 8 == 0, "data must start 8-byte aligned"
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    body = data[8 + n:]
    out, end = {}, 0
    for name, t in header.items():
        b, e = t["data_offsets"]
        assert 0 <= b <= e <= len(body)
        out[name] = (t["dtype"], t["shape"], body[b:e])
        end = max(end, e)
    assert end == len(body)
    return out


def rows_of(path, topk=2048):
    dtype, shape, raw = read_safetensors(path)["sparse_indices"]
    assert dtype == "I32"
    a = array("i")
    a.frombytes(raw)
    if sys.byteorder != "little":
        a.byteswap()
    assert len(a) == shape[0] * shape[1] and shape[1] == topk
    return [list(a[i * topk:(i + 1) * topk]) for i in range(shape[0])], shape


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("traceset")
    index = traceset.write_traceset(out, ["ps64", "ps1"], ["contest", "serving"], seed=1)
    return out, index


def lines_of(out, name):
    path = out / "workloads" / "dsa_paged" / f"{name}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_splitmix64_and_uniform_follow_the_cpp_generator():
    assert synth.splitmix64(0) == 0xE220A8397B1DCDAF  # the reference splitmix64's first output
    rng = synth.Rng(7)
    draws = [rng.uniform(10) for _ in range(2000)]
    assert set(draws) == set(range(10))
    assert all(synth.Rng(3).range(56, 64) in range(56, 65) for _ in range(10))
    assert synth.unit_slots(64) == 64 and synth.unit_slots(1) == 64 and synth.unit_slots(48) == 48


def test_definitions_follow_the_harness_schema_and_the_entry_points(written):
    out, _ = written
    entry = ast.parse((ROOT / "python" / "mlakit" / "flashinfer_bench.py").read_text())
    params = {f.name: [a.arg for a in f.args.args] for f in entry.body
              if isinstance(f, ast.FunctionDef) and f.name in ("run", "run_dps")}
    for name, page_size in ((PS64, 64), (PS1, 1)):
        d = json.loads((out / "definitions" / "dsa_paged" / f"{name}.json").read_text())
        assert d["name"] == name and d["op_type"] == "dsa_paged"
        consts = {k: a["value"] for k, a in d["axes"].items() if a["type"] == "const"}
        assert consts == {"num_qo_heads": 16, "head_dim_ckv": 512, "head_dim_kpe": 64,
                          "page_size": page_size, "topk": 2048}
        assert {k for k, a in d["axes"].items() if a["type"] == "var"} == {"num_tokens", "num_pages"}
        # The harness calls entry points positionally in the definition's order.
        assert list(d["inputs"]) == params["run"]
        assert list(d["inputs"]) + list(d["outputs"]) == params["run_dps"]
        assert d["inputs"]["sparse_indices"]["dtype"] == "int32"
        assert d["inputs"]["sm_scale"]["shape"] is None
        assert d["outputs"]["lse"]["dtype"] == "float32"
        for spec in list(d["inputs"].values()) + list(d["outputs"].values()):
            assert all(axis in d["axes"] for axis in spec["shape"] or [])
        tree = ast.parse(d["reference"])
        assert any(isinstance(n, ast.FunctionDef) and n.name == "run" for n in tree.body)
        for c in d["constraints"]:
            ast.parse(c, mode="eval")


def test_workloads_hold_the_contest_shapes_and_the_serving_batches(written):
    out, index = written
    lines = lines_of(out, PS64)
    assert len(lines) == len(CONTEST["workloads"]) + len(synth.SERVING_TOKENS)
    for i, line in enumerate(lines):
        assert line["definition"] == PS64 and line["solution"] is None and line["evaluation"] is None
        w = line["workload"]
        assert set(w["inputs"]) == {"q_nope", "q_pe", "ckv_cache", "kpe_cache", "sparse_indices",
                                    "sm_scale"}
        assert all(w["inputs"][k] == {"type": "random"} for k in ("q_nope", "q_pe", "ckv_cache",
                                                                   "kpe_cache"))
        assert w["inputs"]["sm_scale"] == {"type": "scalar", "value": CONTEST["sm_scale"]}
        si = w["inputs"]["sparse_indices"]
        assert si["type"] == "safetensors" and si["tensor_key"] == "sparse_indices"
        assert not Path(si["path"]).is_absolute()
        rows, shape = rows_of(out / si["path"])
        num_slots = w["axes"]["num_pages"] * 64
        assert shape[0] == w["axes"]["num_tokens"]
        if i < len(CONTEST["workloads"]):
            expected = CONTEST["workloads"][i]["valid_per_row"]
            assert w["uuid"] == CONTEST["workloads"][i]["uuid"]
            assert w["axes"]["num_pages"] == CONTEST["num_pages"]
        else:
            expected = [2048] * synth.SERVING_TOKENS[i - len(CONTEST["workloads"])]
            assert w["axes"]["num_pages"] == synth.SERVING_NUM_PAGES
        for row, valid in zip(rows, expected):
            # Valid entries first (distinct slots of the cache), then -1; no empty row (the harness
            # fails any inf in an output, so an empty row's lse = -inf would fail every solution).
            assert valid > 0
            assert all(0 <= s < num_slots for s in row[:valid]) and len(set(row[:valid])) == valid
            assert row[valid:] == [-1] * (2048 - valid)
    assert len({line["workload"]["uuid"] for line in lines}) == len(lines)
    names = [w["name"] for w in index["workloads"] if w["definition"] == PS64]
    assert names[0] == "contest-00" and names[-1] == "serving-T256"


def test_sequences_run_page_by_page_and_topk_rows_cluster_by_page(written):
    out, _ = written
    line = lines_of(out, PS64)[9]  # contest-09: rows of 92, 48, 1044, ... valid
    rows, _ = rows_of(out / line["workload"]["inputs"]["sparse_indices"]["path"])
    first = rows[0][:92]
    assert first[0] % 64 == 0 and first[:64] == list(range(first[0], first[0] + 64))
    assert first[64] % 64 == 0 and first[64:] == list(range(first[64], first[64] + 28))
    serving = lines_of(out, PS64)[-1]
    rows, _ = rows_of(out / serving["workload"]["inputs"]["sparse_indices"]["path"])
    pages = [len({s // 64 for s in row}) for row in rows]
    assert all(33 <= p <= 37 for p in pages)  # 2048 slots at 56..64 per page


def test_page_size_one_gathers_the_same_slots(written):
    out, _ = written
    a, b = lines_of(out, PS64), lines_of(out, PS1)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert y["workload"]["axes"]["num_pages"] == x["workload"]["axes"]["num_pages"] * 64
        assert y["workload"]["uuid"] != x["workload"]["uuid"]
        rx, _ = rows_of(out / x["workload"]["inputs"]["sparse_indices"]["path"])
        ry, _ = rows_of(out / y["workload"]["inputs"]["sparse_indices"]["path"])
        assert rx == ry


def test_the_same_seed_writes_the_same_bytes_and_another_seed_other_indices(tmp_path):
    traceset.write_traceset(tmp_path / "a", ["ps64"], ["contest"], seed=1)
    traceset.write_traceset(tmp_path / "b", ["ps64"], ["contest"], seed=1)
    traceset.write_traceset(tmp_path / "c", ["ps64"], ["contest"], seed=2)
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files)
    la, lc = lines_of(tmp_path / "a", PS64), lines_of(tmp_path / "c", PS64)
    ra, _ = rows_of(tmp_path / "a" / la[12]["workload"]["inputs"]["sparse_indices"]["path"])
    rc, _ = rows_of(tmp_path / "c" / lc[12]["workload"]["inputs"]["sparse_indices"]["path"])
    assert ra != rc
    assert [sum(s >= 0 for s in r) for r in ra] == [sum(s >= 0 for s in r) for r in rc]


def test_command_line_writes_the_selection(tmp_path, capsys):
    assert traceset.main(["--out", str(tmp_path), "--definitions", "ps1", "--suites", "serving"]) == 0
    assert "5 workloads" in capsys.readouterr().out
    assert not (tmp_path / "definitions" / "dsa_paged" / f"{PS64}.json").exists()
    assert len(lines_of(tmp_path, PS1)) == 5
    with pytest.raises(SystemExit):
        traceset.main(["--out", str(tmp_path), "--definitions", "ps2"])


def test_the_harness_loader_reads_the_trace_set(written):
    pytest.importorskip("torch", reason="flashinfer-bench needs PyTorch")
    fib = pytest.importorskip("flashinfer_bench", reason="flashinfer-bench is not installed")
    from flashinfer_bench.bench.utils import load_safetensors

    out, _ = written
    ts = fib.TraceSet.from_path(str(out))
    assert set(ts.definitions) == {PS64, PS1}
    assert {k: len(v) for k, v in ts.workloads.items()} == {PS64: 28, PS1: 28}
    d = ts.definitions[PS1]
    t = load_safetensors(d, ts.workloads[PS1][-1].workload, ts.root)["sparse_indices"]
    assert tuple(t.shape) == (256, 2048)


def test_the_reference_matches_an_fp64_reference_with_padding_anywhere_and_an_empty_row():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    import importlib.util

    sys.path.insert(0, str(ROOT / "python" / "tests"))
    import dsa_ref

    spec = importlib.util.spec_from_file_location("fib_reference", traceset.REFERENCE_FILE)
    ref = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref)
    q_nope, q_pe, ckv, kpe, idx = dsa_ref.make_inputs(torch, 20, num_pages=4, page_size=16,
                                                      topk=40, device="cpu", seed=3)
    idx[3, ::3] = -1           # padding anywhere
    idx[5, :] = -1             # an empty row
    idx[7, 10] = 4 * 16 + 5    # out of range: padding too
    out, lse = ref.run(q_nope, q_pe, ckv, kpe, idx, 0.125)
    want_out, want_lse = dsa_ref.reference(torch, q_nope, q_pe, ckv, kpe, idx, 0.125)
    assert out.dtype == torch.bfloat16 and lse.dtype == torch.float32
    assert torch.equal(out[5], torch.zeros_like(out[5])) and bool(torch.all(lse[5] == -math.inf))
    finite = torch.isfinite(want_lse)
    assert torch.allclose(lse[finite].double(), want_lse[finite], atol=1e-4, rtol=0)
    assert (out.double() - want_out).abs().max().item() < 1.6e-2
