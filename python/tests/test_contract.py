"""The binding's argument contract: every bad input raises the documented error, naming the
argument, and the process goes on working. Runs with PyTorch on the GPU, or on CPU tensors where
there is none (all checks but the device check read only metadata)."""

import math

import pytest

import mlakit
from dsa_ref import run_python

T, P, PS, TOPK = 3, 4, 64, 128


@pytest.fixture
def args(torch, any_device):
    """Valid arguments (on CPU they fail only the final device check)."""
    bf16 = torch.bfloat16
    return {
        "q_nope": torch.zeros(T, 16, 512, dtype=bf16, device=any_device),
        "q_pe": torch.zeros(T, 16, 64, dtype=bf16, device=any_device),
        "ckv_cache": torch.zeros(P, PS, 512, dtype=bf16, device=any_device),
        "kpe_cache": torch.zeros(P, PS, 64, dtype=bf16, device=any_device),
        "sparse_indices": torch.zeros(T, TOPK, dtype=torch.int32, device=any_device),
        "sm_scale": 0.1352337788608801,
        "out": torch.empty(T, 16, 512, dtype=bf16, device=any_device),
        "lse": torch.empty(T, 16, dtype=torch.float32, device=any_device),
    }


def call(a):
    a = dict(a)
    out, lse = a.pop("out"), a.pop("lse")
    return mlakit.dsa_sparse_attention(*a.values(), out=out, lse=lse)


def expect_error(a, error, pattern):
    with pytest.raises(error, match=pattern):
        call(a)


def test_valid_arguments_reach_the_device_check_or_run(args):
    if args["q_nope"].is_cuda:
        pytest.skip("covered by test_gpu.py on an sm_90 GPU")
    expect_error(args, ValueError, r"^q_nope: expected a CUDA tensor, got a tensor on cpu$")


@pytest.mark.parametrize("name,wrong,expected", [
    ("q_nope", "float16", "bfloat16"),
    ("q_pe", "float32", "bfloat16"),
    ("ckv_cache", "float16", "bfloat16"),
    ("kpe_cache", "int16", "bfloat16"),
    ("sparse_indices", "int64", "int32"),
    ("out", "float32", "bfloat16"),
    ("lse", "bfloat16", "float32"),
])
def test_wrong_dtype_raises_type_error(torch, args, name, wrong, expected):
    args[name] = args[name].to(getattr(torch, wrong))
    expect_error(args, TypeError, rf"^{name}: expected dtype {expected}, got {wrong}$")


@pytest.mark.parametrize("name", ["q_nope", "q_pe", "ckv_cache", "kpe_cache", "sparse_indices",
                                  "out", "lse"])
def test_non_tensor_raises_type_error(args, name):
    args[name] = [[1, 2], [3, 4]]
    expect_error(args, TypeError, rf"^{name}: expected a tensor")


@pytest.mark.parametrize("name", ["q_nope", "q_pe", "ckv_cache", "kpe_cache", "sparse_indices",
                                  "out", "lse"])
def test_wrong_rank_raises_value_error(args, name):
    args[name] = args[name][0]
    expect_error(args, ValueError, rf"^{name}: expected \d dimensions")


@pytest.mark.parametrize("name,shape,why", [
    ("q_pe", (T, 8, 64), "num_tokens and num_heads of q_nope"),
    ("q_pe", (T + 1, 16, 64), "num_tokens and num_heads of q_nope"),
    ("ckv_cache", (P, PS, 256), "head_dim_ckv of q_nope"),
    ("kpe_cache", (P + 1, PS, 64), "num_pages and page_size of ckv_cache"),
    ("kpe_cache", (P, PS // 2, 64), "num_pages and page_size of ckv_cache"),
    ("kpe_cache", (P, PS, 32), "head_dim_kpe of q_pe"),
    ("sparse_indices", (T + 1, TOPK), "num_tokens of q_nope"),
    ("out", (T, 16, 256), "the shape of q_nope"),
    ("out", (T - 1, 16, 512), "the shape of q_nope"),
    ("lse", (T, 8), "num_tokens and num_heads of q_nope"),
])
def test_mismatched_shape_raises_value_error(torch, args, name, shape, why):
    args[name] = torch.zeros(shape, dtype=args[name].dtype, device=args[name].device)
    expect_error(args, ValueError, rf"^{name}: expected shape .*{why}.*\), got \[")


@pytest.mark.parametrize("name", ["q_nope", "q_pe", "ckv_cache", "kpe_cache", "sparse_indices"])
def test_strided_last_dimension_raises_value_error(torch, args, name):
    t = args[name]
    wide = torch.zeros(*t.shape[:-1], 2 * t.shape[-1], dtype=t.dtype, device=t.device)
    args[name] = wide[..., ::2]
    expect_error(args, ValueError, rf"^{name}: the last dimension must be contiguous")


@pytest.mark.parametrize("name", ["q_nope", "q_pe", "ckv_cache", "kpe_cache", "sparse_indices",
                                  "out", "lse"])
def test_misaligned_data_pointer_raises_value_error(torch, args, name):
    t = args[name]
    flat = torch.zeros(t.numel() + 1, dtype=t.dtype, device=t.device)
    args[name] = flat[1:].view(t.shape)  # one element (2 or 4 bytes) past an aligned start
    expect_error(args, ValueError, rf"^{name}: data pointer 0x[0-9a-f]+ is not 16-byte aligned")


@pytest.mark.parametrize("name", ["q_nope", "q_pe"])
def test_row_stride_off_16_bytes_raises_value_error(torch, args, name):
    t = args[name]
    padded = torch.zeros(T, 16, t.shape[-1] + 4, dtype=t.dtype, device=t.device)
    args[name] = padded[..., : t.shape[-1]]  # rows 8 bytes apart from alignment
    expect_error(args, ValueError, rf"^{name}: strides .* multiples of 8 elements")


@pytest.mark.parametrize("name", ["ckv_cache", "kpe_cache"])
def test_cache_pages_with_gaps_raise_value_error(torch, args, name):
    t = args[name]
    gapped = torch.zeros(P, PS + 1, t.shape[-1], dtype=t.dtype, device=t.device)
    args[name] = gapped[:, :PS]  # pages one slot apart: slot j is no longer base + j * stride
    expect_error(args, ValueError, rf"^{name}: pages must be contiguous runs of slots")


@pytest.mark.parametrize("name", ["out", "lse"])
def test_non_contiguous_outputs_raise_value_error(torch, args, name):
    t = args[name]
    wide = torch.zeros(T, 16, *t.shape[2:], 2, dtype=t.dtype, device=t.device)
    args[name] = wide[..., 0]
    expect_error(args, ValueError, rf"^{name}: expected a contiguous tensor")


@pytest.mark.parametrize("value,error,pattern", [
    ("0.1", TypeError, r"^sm_scale: expected a float, got str$"),
    ([0.1], TypeError, r"^sm_scale: expected a float, got list$"),
    (None, TypeError, r"^sm_scale: expected a float, got NoneType$"),
    (True, TypeError, r"^sm_scale: expected a float, got bool$"),
    (math.nan, ValueError, r"^sm_scale: expected a finite"),
    (math.inf, ValueError, r"^sm_scale: expected a finite"),
    (1e300, ValueError, r"^sm_scale: expected a finite float32"),
])
def test_bad_sm_scale(args, value, error, pattern):
    args["sm_scale"] = value
    expect_error(args, error, pattern)


def test_views_that_the_contract_allows_pass_every_check(torch, args):
    """q as head/token-strided views of wider rows, caches as two views of one [P, PS, 576]
    buffer, indices as a column slice: all allowed; on CPU only the device check remains."""
    q = torch.zeros(T, 16, 576, dtype=torch.bfloat16, device=args["q_nope"].device)
    kv = torch.zeros(P, PS, 576, dtype=torch.bfloat16, device=q.device)
    idx = torch.zeros(T, 2 * TOPK, dtype=torch.int32, device=q.device)
    args.update(q_nope=q[..., :512], q_pe=q[..., 512:], ckv_cache=kv[..., :512],
                kpe_cache=kv[..., 512:], sparse_indices=idx[:, :TOPK])
    if q.is_cuda:
        pytest.skip("covered numerically by test_gpu.py")
    expect_error(args, ValueError, r"^q_nope: expected a CUDA tensor")


def test_cpu_tensors_raise_value_error_naming_the_first(torch, args):
    cpu = {k: (v.cpu() if hasattr(v, "cpu") else v) for k, v in args.items()}
    expect_error(cpu, ValueError, r"^q_nope: expected a CUDA tensor, got a tensor on cpu$")


def test_one_tensor_on_another_device_raises_value_error(torch, args):
    if not args["q_nope"].is_cuda:
        pytest.skip("needs a CUDA device")
    dev = args["q_nope"].device.index
    for name in ("q_pe", "ckv_cache", "kpe_cache", "sparse_indices", "out", "lse"):
        a = dict(args)
        a[name] = a[name].cpu()
        expect_error(a, ValueError, rf"^{name}: expected a tensor on cuda:{dev} \(the device of "
                                    rf"q_nope\), got cpu$")


def test_process_survives_a_storm_of_bad_calls(torch, args):
    errors = 0
    for i in range(200):
        a = dict(args)
        name = ["q_nope", "q_pe", "ckv_cache", "kpe_cache", "sparse_indices", "out", "lse"][i % 7]
        a[name] = a[name].to(torch.float64) if i % 2 else "garbage"
        try:
            call(a)
        except (TypeError, ValueError):
            errors += 1
    assert errors == 200
    d = mlakit._C.describe_tensor(args["q_nope"])
    assert d["shape"] == (T, 16, 512)
    if args["q_nope"].is_cuda:
        torch.cuda.synchronize()  # no CUDA error left behind


def test_describe_tensor_matches_torch_metadata(torch, any_device):
    t = torch.zeros(4, 16, 576, dtype=torch.bfloat16, device=any_device)[1:, :, 512:]
    d = mlakit._C.describe_tensor(t)
    assert d["shape"] == tuple(t.shape) and d["strides"] == t.stride()
    assert d["data_ptr"] == t.data_ptr() and d["dtype"] == "bfloat16"
    assert d["device"] == ("cpu" if t.device.type == "cpu" else f"cuda:{t.device.index}")
    expected_route = "exchange" if hasattr(torch.Tensor, "__dlpack_c_exchange_api__") else "dlpack"
    assert d["route"] == expected_route
    assert mlakit.torch_integration()["exchange_api"] == (expected_route == "exchange")


def test_dlpack_route_reads_the_same_metadata(torch):
    code = (
        "import torch, mlakit\n"
        "t = torch.zeros(4, 16, 576, dtype=torch.bfloat16)[1:, :, 512:]\n"
        "d = mlakit._C.describe_tensor(t)\n"
        "assert d['route'] == 'dlpack', d\n"
        "assert d['shape'] == tuple(t.shape) and d['strides'] == t.stride(), d\n"
        "assert d['data_ptr'] == t.data_ptr(), d\n"
        "assert mlakit.torch_integration()['exchange_api'] is False\n"
        "try:\n"
        "    mlakit.dsa_sparse_attention(t, t, t, t, t, 0.1)\n"
        "except TypeError as e:\n"
        "    assert str(e) == 'sparse_indices: expected dtype int32, got bfloat16', e\n"
        "else:\n"
        "    raise AssertionError('no TypeError')\n"
        "print('ok')\n")
    proc = run_python(code, {"MLAKIT_NO_DLPACK_EXCHANGE": "1"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_torch_ops_are_registered(torch):
    assert mlakit.torch_integration()["ops"] is True
    schema = str(torch.ops.mlakit.dsa_sparse_attention.default._schema)
    assert "float sm_scale" in schema and "-> (Tensor, Tensor)" in schema
    schema_out = str(torch.ops.mlakit.dsa_sparse_attention_out.default._schema)
    assert "Tensor(a" in schema_out and "-> ()" in schema_out


def test_fake_implementation_gives_output_shapes(torch):
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        q_nope = torch.empty(5, 16, 512, dtype=torch.bfloat16, device="cuda")
        q_pe = torch.empty(5, 16, 64, dtype=torch.bfloat16, device="cuda")
        ckv = torch.empty(8, 64, 512, dtype=torch.bfloat16, device="cuda")
        kpe = torch.empty(8, 64, 64, dtype=torch.bfloat16, device="cuda")
        idx = torch.empty(5, 2048, dtype=torch.int32, device="cuda")
        out, lse = mlakit.dsa_sparse_attention(q_nope, q_pe, ckv, kpe, idx, 0.1)
        assert out.shape == (5, 16, 512) and out.dtype == torch.bfloat16
        assert lse.shape == (5, 16) and lse.dtype == torch.float32
        assert out.device.type == "cuda"


def _tiny_inputs(torch):
    bf16 = torch.bfloat16
    return (torch.zeros(3, 16, 512, dtype=bf16), torch.zeros(3, 16, 64, dtype=bf16),
            torch.zeros(4, 64, 512, dtype=bf16), torch.zeros(4, 64, 64, dtype=bf16),
            torch.zeros(3, 128, dtype=torch.int32))


def test_dynamo_traces_the_call_as_one_operator(torch):
    """Strict (dynamo) export of code calling mlakit.dsa_sparse_attention: no graph break, the
    registered operators in the graph, fake implementations only (CPU tensors suffice)."""

    class Functional(torch.nn.Module):
        def forward(self, q_nope, q_pe, ckv, kpe, idx):
            out, lse = mlakit.dsa_sparse_attention(q_nope, q_pe, ckv, kpe, idx, 0.1)
            return out.float() * 2.0, lse + 1.0

    class DestinationPassing(torch.nn.Module):
        def forward(self, q_nope, q_pe, ckv, kpe, idx, out, lse):
            mlakit.dsa_sparse_attention(q_nope, q_pe, ckv, kpe, idx, 0.1, out=out, lse=lse)
            return lse.sum()

    args = _tiny_inputs(torch)
    graph = str(torch.export.export(Functional(), args, strict=True).graph)
    assert "torch.ops.mlakit.dsa_sparse_attention.default" in graph
    outputs = (torch.empty(3, 16, 512, dtype=torch.bfloat16), torch.empty(3, 16))
    graph = str(torch.export.export(DestinationPassing(), args + outputs, strict=True).graph)
    assert "torch.ops.mlakit.dsa_sparse_attention_out.default" in graph


def test_compiled_call_reaches_the_extension(torch):
    """torch.compile(fullgraph=True) runs the operator's real implementation: on CPU tensors it
    raises the extension's own error (on a GPU, test_gpu.py checks the numbers)."""
    torch._dynamo.reset()

    @torch.compile(fullgraph=True, backend="eager")
    def step(q_nope, q_pe, ckv, kpe, idx):
        return mlakit.dsa_sparse_attention(q_nope, q_pe, ckv, kpe, idx, 0.1)

    with pytest.raises(ValueError, match=r"^q_nope: expected a CUDA tensor"):
        step(*_tiny_inputs(torch))
