"""mlakit.mla_decode (dense paged MLA decode), its torch.ops operators and the FlashMLA drop-in
mlakit.compat.flash_mla_with_kvcache.

CPU (PyTorch only; CPU tensors where there is no GPU): every bad argument raises the documented
error naming it, the combined layouts are accepted, the operators' schemas and fake
implementations. GPU (sm_90): against the fp64 reference of mla_ref.py under the contest rule,
outputs poisoned with NaN before each call, cache rows no request holds set to NaN.
"""

import math

import pytest

import mlakit
from dsa_ref import CONTEST_SM_SCALE, assert_contest_close
from mla_ref import CKV, D_QK, KPE, make_mla_inputs, mla_reference, separate

B, S, H, P, PS, MP = 3, 2, 16, 6, 64, 4


# ----------------------------------------------------------------------------------- CPU ------

@pytest.fixture
def args(torch, any_device):
    """Valid separate-layout arguments (on CPU they fail only the final device check)."""
    bf16 = torch.bfloat16
    return {
        "q_nope": torch.zeros(B, S, H, CKV, dtype=bf16, device=any_device),
        "q_pe": torch.zeros(B, S, H, KPE, dtype=bf16, device=any_device),
        "ckv_cache": torch.zeros(P, PS, CKV, dtype=bf16, device=any_device),
        "kpe_cache": torch.zeros(P, PS, KPE, dtype=bf16, device=any_device),
        "block_table": torch.zeros(B, MP, dtype=torch.int32, device=any_device),
        "cache_seqlens": torch.zeros(B, dtype=torch.int32, device=any_device),
        "sm_scale": CONTEST_SM_SCALE,
        "causal": True,
        "out": torch.empty(B, S, H, CKV, dtype=bf16, device=any_device),
        "lse": torch.empty(B, S, H, dtype=torch.float32, device=any_device),
    }


@pytest.fixture
def combined(torch, args):
    """The same call in the combined layouts: q [b, s_q, h, 576], cache [pages, page_size, 576]."""
    a = dict(args)
    dev = a["q_nope"].device
    a["q_nope"] = torch.zeros(B, S, H, D_QK, dtype=torch.bfloat16, device=dev)
    a["ckv_cache"] = torch.zeros(P, PS, D_QK, dtype=torch.bfloat16, device=dev)
    a["q_pe"] = a["kpe_cache"] = None
    return a


def call(a):
    a = dict(a)
    causal, out, lse = a.pop("causal"), a.pop("out"), a.pop("lse")
    return mlakit.mla_decode(*a.values(), causal=causal, out=out, lse=lse)


def expect_error(a, error, pattern):
    with pytest.raises(error, match=pattern):
        call(a)


def only_on_cpu(tensor):
    if tensor.is_cuda:
        pytest.skip("on a GPU the call runs: covered by the GPU tests below")


@pytest.mark.parametrize("layout", ["separate", "combined", "combined-q", "combined-cache"])
def test_valid_arguments_reach_the_device_check(torch, args, combined, layout):
    a = {"separate": args, "combined": combined}.get(layout)
    if a is None:
        a = dict(args)
        part = "q" if layout == "combined-q" else "cache"
        keys = ("q_nope", "q_pe") if part == "q" else ("ckv_cache", "kpe_cache")
        a[keys[0]], a[keys[1]] = combined[keys[0]], None
    only_on_cpu(a["q_nope"])
    expect_error(a, ValueError, r"^q_nope: expected a CUDA tensor, got a tensor on cpu$")


@pytest.mark.parametrize("name,wrong,expected", [
    ("q_nope", "float16", "bfloat16"),
    ("q_pe", "float32", "bfloat16"),
    ("ckv_cache", "float16", "bfloat16"),
    ("kpe_cache", "int16", "bfloat16"),
    ("block_table", "int64", "int32"),
    ("cache_seqlens", "int64", "int32"),
    ("out", "float32", "bfloat16"),
    ("lse", "bfloat16", "float32"),
])
def test_wrong_dtype_raises_type_error(torch, args, name, wrong, expected):
    args[name] = args[name].to(getattr(torch, wrong))
    expect_error(args, TypeError, rf"^{name}: expected dtype {expected}, got {wrong}$")


@pytest.mark.parametrize("name", ["q_nope", "q_pe", "ckv_cache", "kpe_cache", "block_table",
                                  "cache_seqlens", "out", "lse"])
def test_non_tensor_raises_type_error(args, name):
    args[name] = [[1, 2], [3, 4]]
    expect_error(args, TypeError, rf"^{name}: expected a tensor")


@pytest.mark.parametrize("name", ["q_nope", "q_pe", "ckv_cache", "kpe_cache", "block_table",
                                  "cache_seqlens", "out", "lse"])
def test_wrong_rank_raises_value_error(args, name):
    args[name] = args[name][0]
    expect_error(args, ValueError, rf"^{name}: expected \d dimensions")


@pytest.mark.parametrize("name,shape,why", [
    ("q_pe", (B, S, 8, KPE), "batch, seq_q and num_heads of q_nope"),
    ("q_pe", (B, S + 1, H, KPE), "batch, seq_q and num_heads of q_nope"),
    ("ckv_cache", (P, PS, 256), "head_dim_ckv of q_nope"),
    ("kpe_cache", (P + 1, PS, KPE), "num_pages and page_size of ckv_cache"),
    ("kpe_cache", (P, PS // 2, KPE), "num_pages and page_size of ckv_cache"),
    ("kpe_cache", (P, PS, 32), "head_dim_kpe of q_pe"),
    ("block_table", (B + 1, MP), "batch of q_nope"),
    ("cache_seqlens", (B - 1,), "batch of q_nope"),
    ("out", (B, S, H, 256), "batch, seq_q and num_heads of q_nope, head_dim_ckv"),
    ("out", (B, 1, H, CKV), "batch, seq_q and num_heads of q_nope, head_dim_ckv"),
    ("lse", (B, S, 8), "batch, seq_q and num_heads of q_nope"),
])
def test_mismatched_shape_raises_value_error(torch, args, name, shape, why):
    args[name] = torch.zeros(shape, dtype=args[name].dtype, device=args[name].device)
    expect_error(args, ValueError, rf"^{name}: expected shape .*{why}.*\), got \[")


@pytest.mark.parametrize("name,width", [("q_nope", 512), ("q_nope", 600),
                                        ("ckv_cache", 512), ("ckv_cache", 570)])
def test_combined_layouts_need_576_wide_rows(torch, combined, name, width):
    shape = (B, S, H, width) if name == "q_nope" else (P, PS, width)
    combined[name] = torch.zeros(shape, dtype=torch.bfloat16, device=combined[name].device)
    none_arg = "q_pe" if name == "q_nope" else "kpe_cache"
    expect_error(combined, ValueError,
                 rf"^{name}: expected shape \[.*576\] \({none_arg} is None: the combined")


def test_a_separate_query_must_match_a_combined_cache(torch, combined, args):
    combined["q_nope"], combined["q_pe"] = args["q_nope"][..., :256], args["q_pe"]
    expect_error(combined, ValueError,
                 r"^q_nope: expected shape \[\*, \*, \*, 512\] \(head_dim_ckv of the combined")


def test_a_combined_query_must_match_a_separate_cache(torch, combined, args):
    combined["ckv_cache"] = args["ckv_cache"]
    combined["kpe_cache"] = torch.zeros(P, PS, 32, dtype=torch.bfloat16,
                                        device=args["ckv_cache"].device)
    expect_error(combined, ValueError,
                 r"^kpe_cache: expected shape \[6, 64, 64\] .*head_dim_kpe of q_nope\[\.\.\., 512:\]")


@pytest.mark.parametrize("name", ["q_nope", "q_pe", "ckv_cache", "kpe_cache", "block_table"])
def test_strided_last_dimension_raises_value_error(torch, args, name):
    t = args[name]
    wide = torch.zeros(*t.shape[:-1], 2 * t.shape[-1], dtype=t.dtype, device=t.device)
    args[name] = wide[..., ::2]
    expect_error(args, ValueError, rf"^{name}: the last dimension must be contiguous")


@pytest.mark.parametrize("name", ["q_nope", "q_pe", "ckv_cache", "kpe_cache", "out", "lse"])
def test_misaligned_data_pointer_raises_value_error(torch, args, name):
    t = args[name]
    flat = torch.zeros(t.numel() + 1, dtype=t.dtype, device=t.device)
    args[name] = flat[1:].view(t.shape)  # one element (2 or 4 bytes) past an aligned start
    expect_error(args, ValueError, rf"^{name}: data pointer 0x[0-9a-f]+ is not 16-byte aligned")


@pytest.mark.parametrize("name", ["q_nope", "q_pe", "ckv_cache", "kpe_cache"])
def test_row_stride_off_16_bytes_raises_value_error(torch, args, name):
    t = args[name]
    padded = torch.zeros(*t.shape[:-1], t.shape[-1] + 4, dtype=t.dtype, device=t.device)
    args[name] = padded[..., : t.shape[-1]]  # rows 8 bytes apart from alignment
    expect_error(args, ValueError, rf"^{name}: strides .* multiples of 8 elements")


@pytest.mark.parametrize("name", ["q_nope", "ckv_cache"])
def test_overlapping_rows_raise_value_error(torch, args, name):
    t = args[name]
    base = torch.zeros(t.numel(), dtype=t.dtype, device=t.device)
    strides = list(t.stride())
    strides[-2] = 256  # each row starts half a row after the previous one
    args[name] = base.as_strided(t.shape, strides)
    expect_error(args, ValueError, rf"^{name}: strides .*: rows overlap; outer strides must be at "
                                   rf"least the row width \(512 elements\)")


def test_outer_dimensions_out_of_order_are_refused(torch, args):
    """q stored head-major ([b, h, s, D] memory, seen as [b, s, h, D]): no two rows overlap, but the
    dimensions do not nest in their order, which mla_run requires (runtime/mla/layout.h); the
    error names the stride. On CPU the device check comes first."""
    dev = args["q_nope"].device
    args["q_nope"] = torch.zeros(B, H, S, CKV, dtype=torch.bfloat16, device=dev).transpose(1, 2)
    if args["q_nope"].is_cuda:
        expect_error(args, ValueError, r"q_nope_stride_s")
    else:
        expect_error(args, ValueError, r"^q_nope: expected a CUDA tensor")


def test_block_table_rows_must_not_overlap(torch, args):
    row = torch.zeros(MP, dtype=torch.int32, device=args["block_table"].device)
    args["block_table"] = row.expand(B, MP)  # row stride 0
    expect_error(args, ValueError, r"^block_table: strides \[0, 1\] for shape \[3, 4\]: the row "
                                   r"stride must be at least max_pages \(4\)")


def test_block_table_may_be_a_column_slice(torch, args):
    wide = torch.zeros(B, 2 * MP, dtype=torch.int32, device=args["block_table"].device)
    args["block_table"] = wide[:, :MP]
    only_on_cpu(args["q_nope"])
    expect_error(args, ValueError, r"^q_nope: expected a CUDA tensor")


@pytest.mark.parametrize("name", ["cache_seqlens", "out", "lse"])
def test_non_contiguous_raise_value_error(torch, args, name):
    t = args[name]
    wide = torch.zeros(*t.shape, 2, dtype=t.dtype, device=t.device)
    args[name] = wide[..., 0]
    expect_error(args, ValueError, rf"^{name}: expected a contiguous tensor")


@pytest.mark.parametrize("value,error,pattern", [
    ("0.1", TypeError, r"^sm_scale: expected a float, got str$"),
    (None, TypeError, r"^sm_scale: expected a float, got NoneType$"),
    (True, TypeError, r"^sm_scale: expected a float, got bool$"),
    (math.nan, ValueError, r"^sm_scale: expected a finite"),
    (1e300, ValueError, r"^sm_scale: expected a finite float32"),
])
def test_bad_sm_scale(args, value, error, pattern):
    args["sm_scale"] = value
    expect_error(args, error, pattern)


@pytest.mark.parametrize("value,kind", [(1, "int"), ("yes", "str"), (None, "NoneType")])
def test_causal_must_be_a_bool(args, value, kind):
    args["causal"] = value
    expect_error(args, TypeError, rf"^causal: expected a bool, got {kind}$")


def test_one_tensor_on_another_device_raises_value_error(torch, args):
    if not args["q_nope"].is_cuda:
        pytest.skip("needs a CUDA device")
    dev = args["q_nope"].device.index
    for name in ("q_pe", "ckv_cache", "kpe_cache", "block_table", "cache_seqlens", "out", "lse"):
        a = dict(args)
        a[name] = a[name].cpu()
        expect_error(a, ValueError, rf"^{name}: expected a tensor on cuda:{dev} \(the device of "
                                    rf"q_nope\), got cpu$")


def test_process_survives_a_storm_of_bad_calls(torch, args):
    names = ["q_nope", "q_pe", "ckv_cache", "kpe_cache", "block_table", "cache_seqlens", "out",
             "lse"]
    errors = 0
    for i in range(160):
        a = dict(args)
        name = names[i % len(names)]
        a[name] = a[name].to(torch.float64) if i % 2 else "garbage"
        try:
            call(a)
        except (TypeError, ValueError):
            errors += 1
    assert errors == 160
    if args["q_nope"].is_cuda:
        torch.cuda.synchronize()  # no CUDA error left behind


def test_mla_check_inputs_checks_its_arguments(torch, args):
    with pytest.raises(TypeError, match=r"^block_table: expected dtype int32, got int64$"):
        mlakit.mla_check_inputs(args["block_table"].long(), args["cache_seqlens"],
                                args["ckv_cache"])
    with pytest.raises(ValueError, match=r"^cache_seqlens: expected shape \[3\] \(batch of "
                                         r"block_table\)"):
        mlakit.mla_check_inputs(args["block_table"], args["cache_seqlens"][:2], args["ckv_cache"])
    if not args["block_table"].is_cuda:
        with pytest.raises(ValueError, match=r"^block_table: expected a CUDA tensor"):
            mlakit.mla_check_inputs(args["block_table"], args["cache_seqlens"], args["ckv_cache"])


def test_torch_ops_are_registered(torch):
    assert mlakit.torch_integration()["ops"] is True
    schema = str(torch.ops.mlakit.mla_decode.default._schema)
    assert "Tensor? q_pe" in schema and "Tensor? kpe_cache" in schema
    assert "float sm_scale, bool causal) -> (Tensor, Tensor)" in schema
    schema_out = str(torch.ops.mlakit.mla_decode_out.default._schema)
    assert "Tensor(a" in schema_out and "-> ()" in schema_out


@pytest.mark.parametrize("layout", ["separate", "combined"])
def test_fake_implementation_gives_output_shapes(torch, layout):
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        def t(*shape, dtype=torch.bfloat16):
            return torch.empty(*shape, dtype=dtype, device="cuda")

        if layout == "separate":
            q = (t(5, 3, 64, CKV), t(5, 3, 64, KPE))
            cache = (t(9, 16, CKV), t(9, 16, KPE))
        else:
            q, cache = (t(5, 3, 64, D_QK), None), (t(9, 16, D_QK), None)
        table, seqlens = t(5, 7, dtype=torch.int32), t(5, dtype=torch.int32)
        out, lse = mlakit.mla_decode(*q, *cache, table, seqlens, 0.1, causal=True)
        assert out.shape == (5, 3, 64, CKV) and out.dtype == torch.bfloat16
        assert lse.shape == (5, 3, 64) and lse.dtype == torch.float32
        assert out.device.type == "cuda"
        given = (t(5, 3, 64, CKV), t(5, 3, 64, dtype=torch.float32))
        got = mlakit.mla_decode(*q, *cache, table, seqlens, 0.1, out=given[0], lse=given[1])
        assert got[0] is given[0] and got[1] is given[1]


def _tiny_combined(torch):
    bf16 = torch.bfloat16
    return (torch.zeros(2, 1, 16, D_QK, dtype=bf16), torch.zeros(4, 64, D_QK, dtype=bf16),
            torch.zeros(2, 3, dtype=torch.int32), torch.zeros(2, dtype=torch.int32))


def test_dynamo_traces_the_call_as_one_operator(torch):
    class Functional(torch.nn.Module):
        def forward(self, q, cache, table, seqlens):
            out, lse = mlakit.mla_decode(q, None, cache, None, table, seqlens, 0.1, causal=True)
            return out.float() * 2.0, lse + 1.0

    class DestinationPassing(torch.nn.Module):
        def forward(self, q, cache, table, seqlens, out, lse):
            mlakit.mla_decode(q, None, cache, None, table, seqlens, 0.1, out=out, lse=lse)
            return lse.sum()

    inputs = _tiny_combined(torch)
    graph = str(torch.export.export(Functional(), inputs, strict=True).graph)
    assert "torch.ops.mlakit.mla_decode.default" in graph
    outputs = (torch.empty(2, 1, 16, CKV, dtype=torch.bfloat16), torch.empty(2, 1, 16))
    graph = str(torch.export.export(DestinationPassing(), inputs + outputs, strict=True).graph)
    assert "torch.ops.mlakit.mla_decode_out.default" in graph


def test_the_operator_route_is_as_strict_about_causal(torch):
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        inputs = [t.to("cuda") for t in _tiny_combined(torch)]
        with pytest.raises(TypeError, match=r"^causal: expected a bool, got int$"):
            mlakit.mla_decode(inputs[0], None, inputs[1], None, *inputs[2:], 0.1, causal=1)


def test_compiled_call_reaches_the_extension(torch):
    torch._dynamo.reset()

    @torch.compile(fullgraph=True, backend="eager")
    def step(q, cache, table, seqlens):
        return mlakit.mla_decode(q, None, cache, None, table, seqlens, 0.1)

    with pytest.raises(ValueError, match=r"^q_nope: expected a CUDA tensor"):
        step(*_tiny_combined(torch))


# ---- FlashMLA drop-in, CPU -------------------------------------------------------------------

def flashmla_args(torch, device="cpu"):
    bf16 = torch.bfloat16
    return dict(q=torch.zeros(B, S, H, D_QK, dtype=bf16, device=device),
                k_cache=torch.zeros(P, PS, 1, D_QK, dtype=bf16, device=device),
                block_table=torch.zeros(B, MP, dtype=torch.int32, device=device),
                cache_seqlens=torch.zeros(B, dtype=torch.int32, device=device),
                head_dim_v=512, tile_scheduler_metadata=None, num_splits=None)


FLASHMLA_BAD_CALLS = {
    "q-not-a-tensor": (lambda t, a: a.update(q=[1]), TypeError, "q: expected a torch.Tensor"),
    "q-float32": (lambda t, a: a.update(q=a["q"].float()), TypeError,
                  "q: expected dtype bfloat16, got float32"),
    "q-float16": (lambda t, a: a.update(q=a["q"].half()), NotImplementedError,
                  "q: float16 is not served"),
    "q-rank": (lambda t, a: a.update(q=a["q"][0]), ValueError, "q: expected 4 dimensions"),
    "q-width": (lambda t, a: a.update(q=a["q"][..., :512]), ValueError,
                "q: expected head_dim 576"),
    "k-cache-rank": (lambda t, a: a.update(k_cache=a["k_cache"][:, :, 0]), ValueError,
                     "k_cache: expected 4 dimensions"),
    "k-cache-heads": (lambda t, a: a.update(k_cache=a["k_cache"].expand(-1, -1, 2, -1)),
                      NotImplementedError, "k_cache: expected num_heads_k = 1"),
    "k-cache-width": (lambda t, a: a.update(k_cache=a["k_cache"][..., :570]), ValueError,
                      "k_cache: expected head_dim 576"),
    "head-dim-v": (lambda t, a: a.update(head_dim_v=576), ValueError, "head_dim_v: expected 512"),
    "fp8": (lambda t, a: a.update(is_fp8_kvcache=True), NotImplementedError, "is_fp8_kvcache"),
    "indices-bf16-cache": (lambda t, a: a.update(indices=t.zeros(B, S, 64, dtype=t.int32)),
                           ValueError, "is_fp8_kvcache: sparse attention (indices) reads "
                                       "DeepSeek-V3.2's FP8 cache"),
    "attn-sink": (lambda t, a: a.update(attn_sink=t.zeros(H)), NotImplementedError, "attn_sink"),
    "block-table-dtype": (lambda t, a: a.update(block_table=a["block_table"].long()), TypeError,
                          "block_table: expected dtype int32, got int64"),
    "cache-seqlens-shape": (lambda t, a: a.update(cache_seqlens=a["cache_seqlens"][:1]),
                            ValueError, "cache_seqlens: expected shape [3] (batch of q_nope)"),
}


@pytest.mark.parametrize("case", list(FLASHMLA_BAD_CALLS))
def test_flashmla_bad_arguments_raise_naming_the_argument(torch, case):
    from mlakit import compat

    a = flashmla_args(torch)
    mutate, error, message = FLASHMLA_BAD_CALLS[case]
    mutate(torch, a)
    with pytest.raises(error) as info:
        compat.flash_mla_with_kvcache(**a)
    assert message in str(info.value)


def test_flashmla_valid_arguments_reach_the_device_check(torch):
    from mlakit import compat

    a = flashmla_args(torch)
    with pytest.raises(ValueError, match=r"^q_nope: expected a CUDA tensor, got a tensor on cpu$"):
        compat.flash_mla_with_kvcache(a.pop("q"), a.pop("k_cache"), a.pop("block_table"),
                                      a.pop("cache_seqlens"), 512, None, None, None, True)


def test_flashmla_signatures_match_flashmla(torch):
    import inspect

    from mlakit import compat

    params = inspect.signature(compat.flash_mla_with_kvcache).parameters
    assert list(params) == [
        "q", "k_cache", "block_table", "cache_seqlens", "head_dim_v", "tile_scheduler_metadata",
        "num_splits", "softmax_scale", "causal", "is_fp8_kvcache", "indices", "attn_sink",
        "extra_k_cache", "extra_indices_in_kvcache", "topk_length", "extra_topk_length"]
    assert params["tile_scheduler_metadata"].default is inspect.Parameter.empty
    assert params["num_splits"].default is None and params["softmax_scale"].default is None
    assert params["causal"].default is False and params["is_fp8_kvcache"].default is False
    assert list(inspect.signature(compat.get_mla_metadata).parameters) == [
        "cache_seqlens", "num_q_tokens_per_head_k", "num_heads_k", "num_heads_q",
        "is_fp8_kvcache", "topk"]


def test_get_mla_metadata_without_arguments_is_the_2026_interface(torch):
    from mlakit import compat

    metadata, num_splits = compat.get_mla_metadata()
    assert num_splits is None
    assert metadata.dtype == torch.int32 and tuple(metadata.shape) == (0, 8)


@pytest.mark.parametrize("kwargs,error,message", [
    (dict(is_fp8_kvcache=True), NotImplementedError, "is_fp8_kvcache: dense attention on an fp8 cache"),
    (dict(topk=2048), NotImplementedError, "topk: sparse attention"),
    (dict(num_heads_k=2), NotImplementedError, "num_heads_k: expected 1"),
    (dict(num_heads_k=1.0), TypeError, "num_heads_k: expected an int, got float"),
    (dict(num_q_tokens_per_head_k=0), ValueError, "num_q_tokens_per_head_k: expected a positive"),
    (dict(cache_seqlens="x"), TypeError, "cache_seqlens: expected a torch.Tensor"),
])
def test_get_mla_metadata_bad_arguments(torch, any_device, kwargs, error, message):
    from mlakit import compat

    a = dict(cache_seqlens=torch.zeros(B, dtype=torch.int32, device=any_device),
             num_q_tokens_per_head_k=S * H, num_heads_k=1)
    a.update(kwargs)
    with pytest.raises(error) as info:
        compat.get_mla_metadata(**a)
    assert message in str(info.value)


def test_get_mla_metadata_needs_cuda_seqlens(torch):
    from mlakit import compat

    with pytest.raises(ValueError, match=r"^cache_seqlens: expected a CUDA tensor, got a tensor on cpu"):
        compat.get_mla_metadata(torch.zeros(B, dtype=torch.int32), S * H, 1)


# ----------------------------------------------------------------------------------- GPU ------

def poisoned_outputs(torch, q, device):
    """out and lse filled with NaN, so that an element the kernel does not write fails."""
    b, s_q, h = q.shape[:3]
    return (torch.full((b, s_q, h, CKV), math.nan, dtype=torch.bfloat16, device=device),
            torch.full((b, s_q, h), math.nan, dtype=torch.float32, device=device))


def run_combined(torch, inputs, device, causal, sm_scale=CONTEST_SM_SCALE):
    out, lse = poisoned_outputs(torch, inputs["q"], device)
    got = mlakit.mla_decode(inputs["q"], None, inputs["cache"], None, inputs["block_table"],
                            inputs["cache_seqlens"], sm_scale, causal=causal, out=out, lse=lse)
    assert got[0] is out and got[1] is lse
    return out, lse


def check(torch, inputs, out, lse, causal, sm_scale=CONTEST_SM_SCALE):
    torch.cuda.synchronize()
    want_out, want_lse = mla_reference(torch, inputs["q"], inputs["cache"], inputs["block_table"],
                                       inputs["cache_seqlens"], sm_scale, causal)
    assert_contest_close(torch, out, want_out, "output")
    assert_contest_close(torch, lse, want_lse, "lse")


# seqlens cover: 0 (empty), 1, page boundaries, a partial last page, long requests.
CASES = {
    "h16-ps64-decode": dict(seqlens=[1, 64, 65, 1000, 0, 2047], heads=16),
    "h32-ps64-decode": dict(seqlens=[300, 0, 129], heads=32),
    "h64-ps64-decode": dict(seqlens=[4096, 63, 1], heads=64),
    "h128-ps64-decode": dict(seqlens=[777, 64, 0, 1500], heads=128),
    "h16-ps16-decode": dict(seqlens=[15, 16, 17, 900, 0], heads=16, page_size=16),
    "h128-ps16-decode": dict(seqlens=[33, 512], heads=128, page_size=16),
    "h16-ps64-s2-causal": dict(seqlens=[1, 2, 65, 1000, 0], heads=16, seq_q=2, causal=True),
    "h64-ps64-s4-causal": dict(seqlens=[3, 4, 64, 700, 0], heads=64, seq_q=4, causal=True),
    "h128-ps16-s2-causal": dict(seqlens=[1, 16, 300], heads=128, page_size=16, seq_q=2,
                                causal=True),
    "h32-ps16-s4-causal": dict(seqlens=[2, 17, 500], heads=32, page_size=16, seq_q=4,
                               causal=True),
    "h16-ps64-s4-not-causal": dict(seqlens=[5, 130, 0], heads=16, seq_q=4),
}


@pytest.mark.parametrize("case", list(CASES))
def test_matches_reference(torch, gpu, case):
    spec = dict(CASES[case])
    causal = spec.pop("causal", False)
    inputs = make_mla_inputs(torch, device=gpu, seed=len(case), **spec)
    out, lse = run_combined(torch, inputs, gpu, causal)
    check(torch, inputs, out, lse, causal)


def test_empty_requests_give_zero_and_minus_inf(torch, gpu):
    """seqlen 0, and causal queries that see no row (seqlen 1 with s_q = 4: the first three)."""
    inputs = make_mla_inputs(torch, [0, 1, 0, 40], seq_q=4, device=gpu, seed=30)
    out, lse = run_combined(torch, inputs, gpu, causal=True)
    torch.cuda.synchronize()
    for b, i in [(0, 0), (0, 3), (1, 0), (1, 1), (1, 2), (2, 2)]:
        assert bool((out[b, i] == 0).all()), (b, i)
        assert bool(torch.isneginf(lse[b, i]).all()), (b, i)
    assert bool(torch.isfinite(lse[1, 3]).all()) and bool(torch.isfinite(lse[3]).all())
    check(torch, inputs, out, lse, causal=True)


def test_seqlens_past_the_table_are_clamped(torch, gpu):
    """cache_seqlens beyond max_pages * page_size read max_pages pages (the contract's clamp)."""
    inputs = make_mla_inputs(torch, [64 * 3 + 50, 10], max_pages=3, device=gpu, seed=31)
    out, lse = run_combined(torch, inputs, gpu, causal=False)
    check(torch, inputs, out, lse, causal=False)


def test_sm_scale_is_a_runtime_value(torch, gpu):
    inputs = make_mla_inputs(torch, [100, 300], device=gpu, seed=32)
    out, lse = run_combined(torch, inputs, gpu, causal=False, sm_scale=0.05)
    check(torch, inputs, out, lse, causal=False, sm_scale=0.05)


@pytest.mark.parametrize("causal", [False, True])
def test_combined_and_separate_layouts_are_bitwise_identical(torch, gpu, causal):
    inputs = make_mla_inputs(torch, [1, 200, 0, 1024], seq_q=2, heads=64, device=gpu, seed=33)
    q, cache = inputs["q"], inputs["cache"]
    table, seqlens = inputs["block_table"], inputs["cache_seqlens"]
    q_nope, q_pe, ckv, kpe = separate(torch, inputs)
    calls = {
        "combined": (q, None, cache, None),
        "separate": (q_nope, q_pe, ckv, kpe),
        "views": (q[..., :CKV], q[..., CKV:], cache[..., :CKV], cache[..., CKV:]),
        "combined-q": (q, None, ckv, kpe),
        "combined-cache": (q_nope, q_pe, cache, None),
    }
    results = {}
    for name, tensors in calls.items():
        out, lse = poisoned_outputs(torch, q, gpu)
        mlakit.mla_decode(*tensors, table, seqlens, CONTEST_SM_SCALE, causal=causal, out=out,
                          lse=lse)
        results[name] = (out, lse)
    torch.cuda.synchronize()
    want_out, want_lse = results["combined"]
    for name, (out, lse) in results.items():
        assert torch.equal(out, want_out), name
        assert torch.equal(lse, want_lse), name
    check(torch, inputs, want_out, want_lse, causal)


def test_two_runs_are_bitwise_equal(torch, gpu):
    inputs = make_mla_inputs(torch, [3000, 17, 640, 0, 1], seq_q=2, heads=128, device=gpu,
                             seed=34)
    first = run_combined(torch, inputs, gpu, causal=True)
    second = run_combined(torch, inputs, gpu, causal=True)
    torch.cuda.synchronize()
    assert torch.equal(first[0], second[0]) and torch.equal(first[1], second[1])


def test_missing_outputs_are_allocated(torch, gpu):
    inputs = make_mla_inputs(torch, [70, 5], seq_q=2, device=gpu, seed=35)
    out, lse = mlakit.mla_decode(inputs["q"], None, inputs["cache"], None, inputs["block_table"],
                                 inputs["cache_seqlens"], CONTEST_SM_SCALE)
    assert out.shape == (2, 2, 16, CKV) and out.dtype == torch.bfloat16 and out.device == gpu
    assert lse.shape == (2, 2, 16) and lse.dtype == torch.float32 and lse.device == gpu
    check(torch, inputs, out, lse, causal=False)


def test_zero_batch_returns_empty_outputs(torch, gpu):
    inputs = make_mla_inputs(torch, [], device=gpu)
    out, lse = mlakit.mla_decode(inputs["q"], None, inputs["cache"], None, inputs["block_table"],
                                 inputs["cache_seqlens"], CONTEST_SM_SCALE)
    assert out.shape == (0, 1, 16, CKV) and lse.shape == (0, 1, 16)


def test_a_preallocated_call_allocates_nothing(torch, gpu):
    inputs = make_mla_inputs(torch, [500, 20, 1], device=gpu, seed=36)
    out, lse = poisoned_outputs(torch, inputs["q"], gpu)
    args = (inputs["q"], None, inputs["cache"], None, inputs["block_table"],
            inputs["cache_seqlens"], CONTEST_SM_SCALE)
    mlakit.mla_decode(*args, out=out, lse=lse)  # plan + workspace
    torch.cuda.synchronize()
    allocated, stats = torch.cuda.memory_allocated(gpu), mlakit._C.cache_stats()
    for _ in range(20):
        mlakit.mla_decode(*args, out=out, lse=lse)
    torch.cuda.synchronize()
    assert torch.cuda.memory_allocated(gpu) == allocated
    assert mlakit._C.cache_stats() == stats


def test_runs_on_the_current_stream(torch, gpu):
    """q is written on a side stream behind a long sleep: a launch on any other stream would
    read it before it exists."""
    inputs = make_mla_inputs(torch, [300, 64], device=gpu, seed=37)
    late = dict(inputs, q=torch.zeros_like(inputs["q"]))
    out, lse = poisoned_outputs(torch, inputs["q"], gpu)
    torch.cuda.synchronize()
    side = torch.cuda.Stream(device=gpu)
    with torch.cuda.stream(side):
        torch.cuda._sleep(100_000_000)  # ~50 ms of spinning at H200 clocks
        late["q"].copy_(inputs["q"])
        mlakit.mla_decode(late["q"], None, inputs["cache"], None, inputs["block_table"],
                          inputs["cache_seqlens"], CONTEST_SM_SCALE, out=out, lse=lse)
    side.synchronize()
    check(torch, inputs, out, lse, causal=False)


def copy_into(static, fresh):
    for key in static:
        static[key].copy_(fresh[key])


@pytest.mark.parametrize("causal", [False, True])
def test_cuda_graph_replays_new_inputs(torch, gpu, causal):
    """Captured once; every replay reads new q, cache, block_table and seqlens (same shapes), and
    the workspace counters the kernel leaves at zero serve the next replay."""
    shape = dict(seq_q=2, heads=32, num_pages=40, max_pages=16)
    static = make_mla_inputs(torch, [1024, 0, 1, 65], device=gpu, seed=38, **shape)
    out, lse = poisoned_outputs(torch, static["q"], gpu)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        mlakit.mla_decode(static["q"], None, static["cache"], None, static["block_table"],
                          static["cache_seqlens"], CONTEST_SM_SCALE, causal=causal, out=out,
                          lse=lse)
    for seed, seqlens in ((39, [5, 1024, 700, 0]), (40, [1, 1, 1, 1]), (41, [0, 64, 1000, 129])):
        fresh = make_mla_inputs(torch, seqlens, device=gpu, seed=seed, **shape)
        assert fresh["cache"].shape == static["cache"].shape, "the test needs equal shapes"
        copy_into(static, fresh)
        out.fill_(math.nan)
        lse.fill_(math.nan)
        graph.replay()
        check(torch, fresh, out, lse, causal)


def test_cuda_graph_of_the_allocating_form(torch, gpu):
    shape = dict(heads=16, num_pages=12, max_pages=8)
    static = make_mla_inputs(torch, [300, 10], device=gpu, seed=42, **shape)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out, lse = mlakit.mla_decode(static["q"], None, static["cache"], None,
                                     static["block_table"], static["cache_seqlens"],
                                     CONTEST_SM_SCALE)
    fresh = make_mla_inputs(torch, [12, 500], device=gpu, seed=43, **shape)
    copy_into(static, fresh)
    graph.replay()
    check(torch, fresh, out, lse, causal=False)


def test_torch_ops_match_the_direct_call(torch, gpu):
    inputs = make_mla_inputs(torch, [90, 300, 0], seq_q=2, device=gpu, seed=44)
    args = (inputs["q"], None, inputs["cache"], None, inputs["block_table"],
            inputs["cache_seqlens"], CONTEST_SM_SCALE, True)
    out, lse = mlakit.mla_decode(*args[:-1], causal=True)
    op_out, op_lse = torch.ops.mlakit.mla_decode(*args)
    dps_out, dps_lse = poisoned_outputs(torch, inputs["q"], gpu)
    torch.ops.mlakit.mla_decode_out(*args, dps_out, dps_lse)
    torch.cuda.synchronize()
    assert torch.equal(op_out, out) and torch.equal(op_lse, lse)
    assert torch.equal(dps_out, out) and torch.equal(dps_lse, lse)


def test_opcheck(torch, gpu):
    inputs = make_mla_inputs(torch, [70, 3], seq_q=2, device=gpu, seed=45)
    q_nope, q_pe, ckv, kpe = separate(torch, inputs)
    rest = (inputs["block_table"], inputs["cache_seqlens"], CONTEST_SM_SCALE, True)
    torch.library.opcheck(torch.ops.mlakit.mla_decode.default, (q_nope, q_pe, ckv, kpe, *rest))
    torch.library.opcheck(torch.ops.mlakit.mla_decode.default,
                          (inputs["q"], None, inputs["cache"], None, *rest))
    out, lse = poisoned_outputs(torch, inputs["q"], gpu)
    torch.library.opcheck(torch.ops.mlakit.mla_decode_out.default,
                          (q_nope, q_pe, ckv, kpe, *rest, out, lse))


def test_torch_compile_full_graph(torch, gpu):
    def step(q, cache, table, seqlens):
        out, lse = mlakit.mla_decode(q, None, cache, None, table, seqlens, CONTEST_SM_SCALE,
                                     causal=True)
        return out.float() * 2.0, lse + 1.0

    torch._dynamo.reset()
    inputs = make_mla_inputs(torch, [100, 7], seq_q=2, device=gpu, seed=46)
    args = (inputs["q"], inputs["cache"], inputs["block_table"], inputs["cache_seqlens"])
    want = step(*args)
    got = torch.compile(step, fullgraph=True)(*args)
    torch.cuda.synchronize()
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])


def test_mla_check_inputs_reports_bad_seqlens_and_pages(torch, gpu):
    inputs = make_mla_inputs(torch, [100, 64], device=gpu, seed=47)
    table, seqlens, cache = inputs["block_table"], inputs["cache_seqlens"], inputs["cache"]
    mlakit.mla_check_inputs(table, seqlens, cache)  # valid: junk ids past the used pages are fine
    too_long = seqlens.clone()
    too_long[1] = table.shape[1] * cache.shape[1] + 1
    with pytest.raises(ValueError, match="cache_seqlens"):
        mlakit.mla_check_inputs(table, too_long, cache)
    bad_page = table.clone()
    bad_page[0, 0] = cache.shape[0]
    with pytest.raises(ValueError, match="block_table"):
        mlakit.mla_check_inputs(bad_page, seqlens, cache)


# ---- FlashMLA drop-in, GPU -------------------------------------------------------------------

@pytest.mark.parametrize("causal,seq_q,heads", [(False, 1, 128), (True, 2, 64), (True, 4, 16)])
def test_flashmla_adapter_matches_the_native_call(torch, gpu, causal, seq_q, heads):
    from mlakit import compat

    inputs = make_mla_inputs(torch, [1, 0, 300, 2000], seq_q=seq_q, heads=heads, device=gpu,
                             seed=48 + seq_q)
    q, cache = inputs["q"], inputs["cache"]
    table, seqlens = inputs["block_table"], inputs["cache_seqlens"]
    metadata, num_splits = compat.get_mla_metadata(seqlens, seq_q * heads, 1)
    assert metadata.dtype == torch.int32 and metadata.shape[1] == 8 and metadata.shape[0] >= 1
    assert num_splits.dtype == torch.int32 and tuple(num_splits.shape) == (5,)
    k_cache = cache.view(cache.shape[0], cache.shape[1], 1, D_QK)
    out, lse = compat.flash_mla_with_kvcache(q, k_cache, table, seqlens, 512, metadata,
                                             num_splits, softmax_scale=CONTEST_SM_SCALE,
                                             causal=causal)
    native_out, native_lse = run_combined(torch, inputs, gpu, causal)
    torch.cuda.synchronize()
    assert out.shape == (4, seq_q, heads, CKV) and out.dtype == torch.bfloat16
    assert lse.shape == (4, heads, seq_q) and lse.dtype == torch.float32 and lse.is_contiguous()
    assert torch.equal(out, native_out)
    want_lse = torch.where(native_lse == -math.inf, math.inf, native_lse * math.log(2.0))
    assert torch.equal(lse, want_lse.transpose(1, 2))
    assert bool(torch.isposinf(lse[1]).all())  # the empty request: FlashMLA's +inf
    check(torch, inputs, native_out, native_lse, causal)


def test_flashmla_default_scale_is_one_over_sqrt_576(torch, gpu):
    from mlakit import compat

    inputs = make_mla_inputs(torch, [50, 600], device=gpu, seed=52)
    cache = inputs["cache"]
    k_cache = cache.view(cache.shape[0], cache.shape[1], 1, D_QK)
    out, _ = compat.flash_mla_with_kvcache(inputs["q"], k_cache, inputs["block_table"],
                                           inputs["cache_seqlens"], 512, *compat.get_mla_metadata())
    native_out, _ = run_combined(torch, inputs, gpu, causal=False, sm_scale=D_QK ** -0.5)
    torch.cuda.synchronize()
    assert torch.equal(out, native_out)


# Head counts the kernels do not run natively (Kimi-K2 at TP 8: 8 heads; FlashMLA's tests: 1, 9,
# 63, 126) run at the next served count with zero heads added: the outputs are the padded call's
# first h_q heads, and the reference's.
@pytest.mark.parametrize("heads,seq_q,causal", [(8, 1, False), (1, 2, True), (9, 1, False),
                                                (63, 2, True), (126, 1, False)])
def test_flashmla_adapter_pads_unserved_head_counts(torch, gpu, heads, seq_q, causal):
    from mlakit import compat

    inputs = make_mla_inputs(torch, [1, 0, 300, 2000], seq_q=seq_q, heads=heads, device=gpu,
                             seed=60 + heads)
    q, cache = inputs["q"], inputs["cache"]
    k_cache = cache.view(cache.shape[0], cache.shape[1], 1, D_QK)
    out, lse = compat.flash_mla_with_kvcache(q, k_cache, inputs["block_table"],
                                             inputs["cache_seqlens"], 512, None,
                                             softmax_scale=CONTEST_SM_SCALE, causal=causal)
    served = next(h for h in compat.SUPPORTED_HEADS if h >= heads)
    padded = q.new_zeros(q.shape[0], seq_q, served, D_QK)
    padded[:, :, :heads] = q
    p_out, p_lse = mlakit.mla_decode(padded, None, cache, None, inputs["block_table"],
                                     inputs["cache_seqlens"], CONTEST_SM_SCALE, causal=causal)
    torch.cuda.synchronize()
    assert out.shape == (4, seq_q, heads, CKV) and out.is_contiguous()
    assert lse.shape == (4, heads, seq_q) and lse.is_contiguous()
    assert torch.equal(out, p_out[:, :, :heads])
    want_lse = torch.where(p_lse == -math.inf, math.inf, p_lse * math.log(2.0))[:, :, :heads]
    assert torch.equal(lse, want_lse.transpose(1, 2))
    check(torch, inputs, out, p_lse[:, :, :heads], causal)


def test_native_call_refuses_unserved_head_counts_with_not_implemented(torch, gpu):
    inputs = make_mla_inputs(torch, [10, 20], heads=8, device=gpu, seed=70)
    with pytest.raises(NotImplementedError, match="8 heads"):
        mlakit.mla_decode(inputs["q"], None, inputs["cache"], None, inputs["block_table"],
                          inputs["cache_seqlens"], CONTEST_SM_SCALE)
