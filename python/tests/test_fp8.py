"""DeepSeek-V3.2's FP8 cache: mlakit.quantize_dsa_fp8, mlakit.dequantize_dsa_fp8,
mlakit.dsa_sparse_attention_fp8 and their torch.ops operators.

CPU (PyTorch only; CPU tensors where there is no GPU): every bad argument raises the documented
error naming it before any GPU work, the accepted cache layouts (FlashMLA's padded 4-D
float8_e4m3fn view included), the Python dequantizer on hand-made rows and the pure-torch
quantizer of these tests against a Python transcription of the host codec
(src/reference/dsa/fp8.cpp), the operators' schemas and fake implementations. GPU (sm_90): the
quantizer bit for bit against the pure-torch rule, the attention against the fp64 reference of
dsa_ref.py run on the dequantized cache under the contest rule, outputs poisoned with NaN before
each call, FlashMLA's layout, CUDA graphs, streams, torch.compile.
"""

import math
import struct

import pytest

import mlakit
from dsa_ref import (CASES, CONTEST_SM_SCALE, assert_contest_close, make_inputs, mark_index_edge_cases,
                     reference, run_python)

ROW, LATENT, ROPE, TILE = 656, 512, 64, 128
T, P, PS, TOPK = 3, 4, 64, 128


# ---- the format in plain Python: a transcription of the host codec (reference/dsa/fp8.cpp) ------

def e4m3_value(code):
    """The value of an E4M3 (finite-only) byte: e4m3_to_float."""
    e, m = (code >> 3) & 15, code & 7
    if e == 15 and m == 7:
        return math.nan
    value = m * 2.0**-9 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7)
    return -value if code & 0x80 else value


def e4m3_code(x):
    """The E4M3 byte of a float: e4m3_from_float (nearest even, saturating to 448)."""
    sign = 0x80 if math.copysign(1.0, x) < 0 else 0
    if math.isnan(x):
        return sign | 0x7F
    a = abs(x)
    if a >= 448:
        return sign | 0x7E
    if a < 2.0**-6:  # subnormal steps of 2^-9; round() ties to even
        return sign | round(a * 512)
    e = math.frexp(a)[1] - 1  # a = 1.m * 2^e
    m = round((a / 2.0**e - 1) * 8)
    if m == 8:
        m, e = 0, e + 1
    return sign | ((e + 7) << 3) | m


def fp32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def tile_scale(amax):
    """tile_scale: max(amax / 448, 1e-4) in fp32, rounded up to a power of two in its bits."""
    r = max(fp32(fp32(amax) / 448.0), fp32(1e-4))
    (u,) = struct.unpack("<I", struct.pack("<f", r))
    if u & 0x007FFFFF:
        u = (u & 0xFF800000) + 0x00800000
    return struct.unpack("<f", struct.pack("<I", u))[0]


def bf16_bits(x):
    """bf16 bits of a float that bf16 holds exactly."""
    (u,) = struct.unpack("<I", struct.pack("<f", x))
    assert u & 0xFFFF == 0, f"{x} is not a bf16 value"
    return u >> 16


# ---- the rule in PyTorch: what the GPU quantizer must equal --------------------------------------

def quantize_reference(torch, ckv, kpe):
    """uint8 [P, PS, 656] by the rule of include/mlakit/dsa_fp8.h, in PyTorch on the inputs'
    device: per 128-channel tile, scale = the smallest power of two >= max(amax / 448, 1e-4)
    (fp32; exact through frexp: r = mantissa * 2^exponent with mantissa in [0.5, 1), a power of
    two when the mantissa is 0.5), codes = e4m3(x / scale)."""
    num_pages, page_size = ckv.shape[:2]
    x = ckv.float().reshape(num_pages, page_size, LATENT // TILE, TILE)
    r = torch.clamp_min(x.abs().amax(dim=-1) / 448.0, 1e-4)
    mantissa, exponent = torch.frexp(r)
    scale = torch.where(mantissa == 0.5, r, torch.ldexp(torch.ones_like(r), exponent))
    codes = (x / scale[..., None]).to(torch.float8_e4m3fn).view(torch.uint8)
    return torch.cat([codes.reshape(num_pages, page_size, LATENT),
                      scale.contiguous().view(torch.uint8),
                      kpe.contiguous().view(torch.uint8)], dim=-1)


def assert_bytes_equal(torch, got, want):
    got, want = got.view(torch.uint8), want.view(torch.uint8)
    assert got.shape == want.shape, (got.shape, want.shape)
    diff = got != want
    if bool(diff.any()):
        page, row, byte = (int(i) for i in diff.nonzero()[0])
        part = "e4m3" if byte < LATENT else "scale" if byte < 528 else "rope"
        raise AssertionError(f"{int(diff.sum())} bytes differ; first at page {page}, row {row}, "
                             f"byte {byte} ({part}): got {int(got[page, row, byte])}, want "
                             f"{int(want[page, row, byte])}")


def varied_cache(torch, num_pages, page_size, *, seed, device):
    """bf16 ckv [P, PS, 512] and kpe [P, PS, 64] whose 128-channel tiles span magnitudes 2^-40 to
    2^40, with whole zero tiles, tiles below the 1e-4 * 448 scale floor, negative zeros, and
    tiles holding e4m3 rounding ties (1.0625, 1.1875, 1.5 * 2^-9 next to 448: scale 1)."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    shape = (num_pages, page_size, LATENT // TILE, TILE)
    base = torch.randn(shape, generator=g)
    x = base * torch.exp2(torch.randint(-40, 41, shape[:3] + (1,), generator=g).float())
    kind = torch.randint(0, 10, shape[:3] + (1,), generator=g)
    x = torch.where(kind == 0, torch.zeros_like(x), x)
    x = torch.where(kind == 1, base * 1e-7, x)
    x = torch.where(kind == 2, -torch.zeros_like(x), x)
    ties = torch.tensor([448.0, 300.0, 1.0625, 1.1875, -1.0625, -1.1875, 1.5 * 2.0**-9, -2.0**-10])
    x = torch.where(kind == 3, base, x)  # |x| < 448 but for 448 itself: scale 1
    x[..., :ties.numel()] = torch.where(kind == 3, ties, x[..., :ties.numel()])
    kpe = torch.randn(num_pages, page_size, ROPE, generator=g)
    return (x.reshape(num_pages, page_size, LATENT).to(torch.bfloat16).to(device),
            kpe.to(torch.bfloat16).to(device))


# ---------------------------------------------------------------------------------- CPU --------

def test_dequantize_reads_hand_made_rows(torch):
    """Rows built byte by byte: every e4m3 class (zeros, subnormals, normals, 448, NaN) under four
    scales, and rope values, in a padded 4-D float8_e4m3fn view (FlashMLA's layout)."""
    codes = [0x00, 0x80, 0x01, 0x07, 0x08, 0x38, 0x3C, 0x7E, 0xFE, 0x7F, 0xFF, 0xB9, 0x46, 0x6F]
    scales = [2.0**-13, 1.0, 8.0, 0.5]
    rope = [1.0, -2.5, 3.140625, 0.0, -0.0, 65280.0, 2.0**-20]
    num_pages, page_size = 2, 3
    buf = torch.full((num_pages, page_size + 1, 1, ROW), 0x5A, dtype=torch.uint8)
    want_ckv = torch.zeros(num_pages, page_size, LATENT, dtype=torch.float64)
    want_kpe = torch.zeros(num_pages, page_size, ROPE, dtype=torch.float64)
    for page in range(num_pages):
        for row in range(page_size):
            slot = page * page_size + row
            row_codes = [codes[(slot + d) % len(codes)] for d in range(LATENT)]
            row_scales = scales[slot % 4:] + scales[:slot % 4]
            row_rope = [rope[(slot + d) % len(rope)] for d in range(ROPE)]
            data = (bytes(row_codes) + struct.pack("<4f", *row_scales) +
                    struct.pack("<64H", *(bf16_bits(v) for v in row_rope)))
            buf[page, row, 0] = torch.tensor(list(data), dtype=torch.uint8)
            for d in range(LATENT):
                want_ckv[page, row, d] = e4m3_value(row_codes[d]) * row_scales[d // TILE]
            want_kpe[page, row] = torch.tensor(row_rope, dtype=torch.float64)
    ckv, kpe = mlakit.dequantize_dsa_fp8(buf.view(torch.float8_e4m3fn)[:, :page_size])
    assert ckv.shape == (num_pages, page_size, LATENT) and ckv.dtype == torch.bfloat16
    assert kpe.shape == (num_pages, page_size, ROPE) and kpe.dtype == torch.bfloat16
    nan = torch.isnan(want_ckv)
    assert torch.equal(torch.isnan(ckv), nan)
    # Exact in bf16: each value is a 3-bit mantissa times a power of two.
    assert torch.equal(ckv.double()[~nan], want_ckv[~nan])
    assert torch.equal(ckv.view(torch.int16)[want_ckv == 0].ne(0),
                       torch.signbit(want_ckv[want_ckv == 0]))  # -0 stays -0
    assert torch.equal(kpe.view(torch.int16), want_kpe.to(torch.bfloat16).view(torch.int16))


def test_the_torch_rule_is_the_host_codecs(torch):
    """quantize_reference (what the GPU quantizer is held to) against the host codec's algorithm
    transcribed to Python, value by value, on tiles of every kind varied_cache makes."""
    ckv, kpe = varied_cache(torch, 2, 8, seed=1, device="cpu")
    got = quantize_reference(torch, ckv, kpe)
    x = ckv.float()
    for page in range(2):
        for row in range(8):
            values = x[page, row].tolist()
            scales = [tile_scale(max(abs(v) for v in values[i * TILE:(i + 1) * TILE]))
                      for i in range(4)]
            want = bytes(e4m3_code(fp32(v / scales[d // TILE])) for d, v in enumerate(values))
            want += struct.pack("<4f", *scales) + bytes(kpe[page, row].view(torch.uint8).tolist())
            assert bytes(got[page, row].tolist()) == want, (page, row)


@pytest.mark.parametrize("amax,scale", [
    (448.0, 1.0), (450.0, 2.0), (0.0, 2.0**-13), (2.0**-100, 2.0**-13), (448 * 2.0**-13, 2.0**-13),
    (448 * 2.0**-13 + 2.0**-12, 2.0**-12), (3.0, 2.0**-7), (1000.0, 4.0), (2.0**40, 2.0**32),
])
def test_tile_scales(torch, amax, scale):
    ckv = torch.zeros(1, 1, LATENT, dtype=torch.bfloat16)
    ckv[0, 0, 5] = -amax
    assert float(ckv[0, 0, 5]) == -amax, "the test needs bf16 values"
    row = quantize_reference(torch, ckv, torch.zeros(1, 1, ROPE, dtype=torch.bfloat16))
    assert row[0, 0, 512:528].view(torch.float32).tolist() == [scale, 2.0**-13, 2.0**-13, 2.0**-13]
    assert tile_scale(amax) == scale


def test_dequantized_values_are_within_half_an_e4m3_step(torch):
    ckv, kpe = varied_cache(torch, 3, 16, seed=2, device="cpu")
    cache = quantize_reference(torch, ckv, kpe)
    got_ckv, got_kpe = mlakit.dequantize_dsa_fp8(cache)
    x = ckv.double().reshape(3, 16, 4, TILE)
    scale = cache[..., 512:528].contiguous().view(torch.float32).double()[..., None]
    err = (got_ckv.double().reshape(x.shape) - x).abs()
    # 3 mantissa bits: half a step is 2^-4 of the value, or 2^-10 * scale among subnormals.
    assert bool((err <= x.abs() / 16 + scale * 2.0**-10).all())
    assert torch.equal(got_kpe, kpe)


@pytest.mark.parametrize("cache,error,pattern", [
    ("bf16", TypeError, r"^cache: expected dtype uint8 or float8_e4m3fn, got bfloat16$"),
    ("3d-576", ValueError, r"^cache: expected shape \[num_pages, page_size, 656\] or "
                           r"\[num_pages, page_size, 1, 656\], got \[4, 64, 576\]$"),
    ("4d-2", ValueError, r"^cache: expected shape .*, got \[4, 64, 2, 656\]$"),
    ("list", TypeError, r"^cache: expected a torch.Tensor, got list$"),
])
def test_dequantize_rejects_what_is_no_fp8_cache(torch, cache, error, pattern):
    bad = {"bf16": lambda: torch.zeros(P, PS, ROW, dtype=torch.bfloat16),
           "3d-576": lambda: torch.zeros(P, PS, 576, dtype=torch.uint8),
           "4d-2": lambda: torch.zeros(P, PS, 2, ROW, dtype=torch.uint8),
           "list": lambda: [1, 2]}[cache]()
    with pytest.raises(error, match=pattern):
        mlakit.dequantize_dsa_fp8(bad)


# ---- dsa_sparse_attention_fp8: the argument contract --------------------------------------------

@pytest.fixture
def args(torch, any_device):
    """Valid arguments (on CPU they fail only the final device check)."""
    bf16 = torch.bfloat16
    return {
        "q_nope": torch.zeros(T, 16, LATENT, dtype=bf16, device=any_device),
        "q_pe": torch.zeros(T, 16, ROPE, dtype=bf16, device=any_device),
        "kv_cache": torch.zeros(P, PS, ROW, dtype=torch.uint8, device=any_device),
        "sparse_indices": torch.full((T, TOPK), -1, dtype=torch.int32, device=any_device),
        "sm_scale": CONTEST_SM_SCALE,
        "out": torch.empty(T, 16, LATENT, dtype=bf16, device=any_device),
        "lse": torch.empty(T, 16, dtype=torch.float32, device=any_device),
    }


def call(a):
    a = dict(a)
    out, lse = a.pop("out"), a.pop("lse")
    return mlakit.dsa_sparse_attention_fp8(*a.values(), out=out, lse=lse)


def expect_error(a, error, pattern):
    with pytest.raises(error, match=pattern):
        call(a)


def flashmla_cache(torch, device, num_pages=P, page_size=PS, fill=0):
    """FlashMLA's cache: float8_e4m3fn [num_pages, page_size + 1, 1, 656] allocated, viewed as
    [num_pages, page_size, 1, 656] (each page padded by one row)."""
    buf = torch.full((num_pages, page_size + 1, 1, ROW), fill, dtype=torch.uint8, device=device)
    return buf, buf.view(torch.float8_e4m3fn)[:, :page_size]


def fp8_cache_layouts(torch, device):
    """The cache layouts the binding accepts, by name."""
    return {
        "uint8": torch.zeros(P, PS, ROW, dtype=torch.uint8, device=device),
        "float8": torch.zeros(P, PS, ROW, dtype=torch.float8_e4m3fn, device=device),
        "uint8-4d": torch.zeros(P, PS, 1, ROW, dtype=torch.uint8, device=device),
        "flashmla-padded": flashmla_cache(torch, device)[1],
        "one-page": torch.zeros(1, PS, ROW, dtype=torch.uint8, device=device),
        "page-size-1": torch.zeros(P * PS, 1, ROW, dtype=torch.uint8, device=device),
        "pages-32-bytes-apart": torch.zeros(P, PS * ROW + 32, dtype=torch.uint8,
                                            device=device)[:, :PS * ROW].view(P, PS, ROW),
    }


@pytest.mark.parametrize("layout", ["uint8", "float8", "uint8-4d", "flashmla-padded", "one-page",
                                    "page-size-1", "pages-32-bytes-apart"])
def test_cache_layouts_reach_the_device_check(torch, args, layout):
    if args["q_nope"].is_cuda:
        pytest.skip("on a GPU the call runs: covered by the GPU tests below")
    args["kv_cache"] = fp8_cache_layouts(torch, "cpu")[layout]
    expect_error(args, ValueError, r"^q_nope: expected a CUDA tensor, got a tensor on cpu$")


@pytest.mark.parametrize("name,wrong,expected,got", [
    ("q_nope", "float16", "bfloat16", "float16"),
    ("q_pe", "float32", "bfloat16", "float32"),
    ("kv_cache", "bfloat16", "uint8 or float8_e4m3fn", "bfloat16"),
    ("kv_cache", "int8", "uint8 or float8_e4m3fn", "int8"),
    ("kv_cache", "float8_e5m2", "uint8 or float8_e4m3fn", r"dtype\(code=12, bits=8, lanes=1\)"),
    ("sparse_indices", "int64", "int32", "int64"),
    ("out", "float32", "bfloat16", "float32"),
    ("lse", "bfloat16", "float32", "bfloat16"),
])
def test_wrong_dtype_raises_type_error(torch, args, name, wrong, expected, got):
    args[name] = args[name].to(getattr(torch, wrong))
    expect_error(args, TypeError, rf"^{name}: expected dtype {expected}, got {got}$")


@pytest.mark.parametrize("name", ["q_nope", "q_pe", "kv_cache", "sparse_indices", "out", "lse"])
def test_non_tensor_raises_type_error(args, name):
    args[name] = [[1, 2], [3, 4]]
    expect_error(args, TypeError, rf"^{name}: expected a tensor")


@pytest.mark.parametrize("shape", [(P * PS, ROW), (P, PS, 1, 1, ROW)])
def test_cache_of_another_rank_raises_value_error(torch, args, shape):
    args["kv_cache"] = torch.zeros(shape, dtype=torch.uint8, device=args["kv_cache"].device)
    expect_error(args, ValueError, r"^kv_cache: expected 3 dimensions \[num_pages, page_size, 656\] "
                                   r"or 4 \[num_pages, page_size, 1, 656\], got shape \[")


@pytest.mark.parametrize("name,shape,pattern", [
    ("kv_cache", (P, PS, 576), r"^kv_cache: expected shape \[\*, \*, 656\] \(656-byte rows of the "
                               r"FP8 cache\), got \[4, 64, 576\]$"),
    ("kv_cache", (P, PS, 2, ROW), r"^kv_cache: expected shape \[\*, \*, 1, 656\] .*got \[4, 64, 2, "),
    ("kv_cache", (P, PS, 1, 576), r"^kv_cache: expected shape \[\*, \*, 1, 656\]"),
    ("q_nope", (T, 16, 576), r"^q_nope: expected shape \[\*, \*, 512\] \(the latent width of the "
                             r"FP8 cache\), got \[3, 16, 576\]$"),
    ("q_pe", (T, 16, 32), r"^q_pe: expected shape \[\*, \*, 64\] \(the rope width of the FP8 cache\)"),
    ("q_pe", (T, 8, ROPE), r"^q_pe: expected shape \[3, 16, \*\] \(num_tokens and num_heads of q_nope"),
    ("sparse_indices", (T + 1, TOPK), r"^sparse_indices: expected shape \[3, \*\]"),
    ("out", (T, 16, 256), r"^out: expected shape \[3, 16, 512\]"),
    ("lse", (T, 8), r"^lse: expected shape \[3, 16\]"),
])
def test_mismatched_shape_raises_value_error(torch, args, name, shape, pattern):
    args[name] = torch.zeros(shape, dtype=args[name].dtype, device=args[name].device)
    expect_error(args, ValueError, pattern)


def test_cache_rows_of_a_page_must_be_contiguous(torch, args):
    dev = args["kv_cache"].device
    args["kv_cache"] = torch.zeros(P, PS, 672, dtype=torch.uint8, device=dev)[..., :ROW]
    expect_error(args, ValueError, r"^kv_cache: the rows of a page must be contiguous "
                                   r"\(stride\[1\] == 656\), got strides \[43008, 672, 1\] \(bytes\)")


def test_cache_bytes_must_be_contiguous(torch, args):
    dev = args["kv_cache"].device
    args["kv_cache"] = torch.zeros(P, PS, 2 * ROW, dtype=torch.uint8, device=dev)[..., ::2]
    expect_error(args, ValueError, r"^kv_cache: the last dimension must be contiguous")


@pytest.mark.parametrize("page_stride,pattern", [
    (PS * ROW + 8, r"^kv_cache: the page stride \(stride\[0\]\) must be a multiple of 16 bytes"),
    (PS * ROW + 656 + 4, r"^kv_cache: the page stride \(stride\[0\]\) must be a multiple of 16"),
    (PS * ROW - 16, r"^kv_cache: pages overlap: stride\[0\] must be at least page_size \* 656 = "
                    r"41984, got strides \[41968, 656, 1\]"),
    (0, r"^kv_cache: pages overlap"),
])
def test_cache_page_stride_rules(torch, args, page_stride, pattern):
    flat = torch.zeros(P * (PS + 2) * ROW, dtype=torch.uint8, device=args["kv_cache"].device)
    args["kv_cache"] = flat.as_strided((P, PS, ROW), (page_stride, ROW, 1))
    expect_error(args, ValueError, pattern)


@pytest.mark.parametrize("name", ["q_nope", "kv_cache", "sparse_indices", "out"])
def test_misaligned_data_pointer_raises_value_error(torch, args, name):
    t = args[name]
    flat = torch.zeros(t.numel() + 8, dtype=t.dtype, device=t.device)
    args[name] = flat[8 if name == "kv_cache" else 1:][:t.numel()].view(t.shape)
    expect_error(args, ValueError, rf"^{name}: data pointer 0x[0-9a-f]+ is not 16-byte aligned")


def test_bad_sm_scale(args):
    args["sm_scale"] = math.inf
    expect_error(args, ValueError, r"^sm_scale: expected a finite")


def test_one_tensor_on_another_device_raises_value_error(torch, args):
    if not args["q_nope"].is_cuda:
        pytest.skip("needs a CUDA device")
    dev = args["q_nope"].device.index
    for name in ("q_pe", "kv_cache", "sparse_indices", "out", "lse"):
        a = dict(args)
        a[name] = a[name].cpu()
        expect_error(a, ValueError, rf"^{name}: expected a tensor on cuda:{dev} \(the device of "
                                    rf"q_nope\), got cpu$")


def test_process_survives_a_storm_of_bad_calls(torch, args):
    names = ["q_nope", "q_pe", "kv_cache", "sparse_indices", "out", "lse"]
    for i in range(120):
        a = dict(args)
        name = names[i % len(names)]
        a[name] = a[name].to(torch.float64) if i % 2 else "garbage"
        with pytest.raises(TypeError):
            call(a)
    if args["q_nope"].is_cuda:
        torch.cuda.synchronize()  # no CUDA error left behind


def test_float8_tensors_read_through_both_dlpack_routes(torch):
    t = torch.zeros(2, 3, 1, ROW, dtype=torch.float8_e4m3fn)
    assert mlakit._C.describe_tensor(t)["dtype"] == "float8_e4m3fn"
    code = (
        "import torch, mlakit\n"
        "t = torch.zeros(2, 65, 1, 656, dtype=torch.float8_e4m3fn)[:, :64]\n"
        "d = mlakit._C.describe_tensor(t)\n"
        "assert d['route'] == 'dlpack' and d['dtype'] == 'float8_e4m3fn', d\n"
        "assert d['strides'] == t.stride(), d\n"
        "q = torch.zeros(1, 16, 512, dtype=torch.bfloat16)\n"
        "qp = torch.zeros(1, 16, 64, dtype=torch.bfloat16)\n"
        "idx = torch.zeros(1, 8, dtype=torch.int32)\n"
        "try:\n"
        "    mlakit.dsa_sparse_attention_fp8(q, qp, t, idx, 0.1)\n"
        "except ValueError as e:\n"
        "    assert str(e).startswith('q_nope: expected a CUDA tensor'), e\n"
        "else:\n"
        "    raise AssertionError('no ValueError')\n"
        "print('ok')\n")
    proc = run_python(code, {"MLAKIT_NO_DLPACK_EXCHANGE": "1"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_check_indices_takes_the_fp8_cache(torch):
    idx = torch.zeros(2, 8, dtype=torch.int32)
    with pytest.raises(ValueError, match=r"^ckv_cache: expected 3 dimensions \[num_pages, page_size, "
                                         r"656\] or 4"):
        mlakit.check_indices(idx, torch.zeros(P, ROW, dtype=torch.uint8))
    with pytest.raises(ValueError, match=r"^sparse_indices: expected a CUDA tensor"):
        mlakit.check_indices(idx, flashmla_cache(torch, "cpu")[1])


def test_plan_info_names_the_cache_format(torch):
    with pytest.raises(ValueError, match=r"^kv: expected 'bf16' or 'fp8', got 'fp16'$"):
        mlakit.plan_info(1, 16, kv="fp16", device=0)
    with pytest.raises(ValueError, match="num_tokens"):  # validated before any device query
        mlakit.plan_info(0, 16, kv="fp8", device=0)


# ---- quantize_dsa_fp8: the argument contract ----------------------------------------------------

@pytest.fixture
def qargs(torch, any_device):
    """Valid separate-layout arguments of the quantizer (on CPU they fail only the device check)."""
    bf16 = torch.bfloat16
    return {"ckv": torch.zeros(P, PS, LATENT, dtype=bf16, device=any_device),
            "kpe": torch.zeros(P, PS, ROPE, dtype=bf16, device=any_device),
            "out": torch.empty(P, PS, ROW, dtype=torch.uint8, device=any_device)}


def quantize(a):
    a = dict(a)
    return mlakit.quantize_dsa_fp8(a.pop("ckv"), a.pop("kpe"), **a)


def expect_quantize_error(a, error, pattern):
    with pytest.raises(error, match=pattern):
        quantize(a)


@pytest.mark.parametrize("form", ["separate", "combined", "no-out", "flashmla-out", "float8-out"])
def test_quantizer_arguments_reach_the_device_check(torch, qargs, form):
    if qargs["ckv"].is_cuda:
        pytest.skip("on a GPU the call runs: covered by the GPU tests below")
    if form == "combined":
        qargs["ckv"], qargs["kpe"] = torch.zeros(P, PS, 576, dtype=torch.bfloat16), None
    if form == "no-out":
        del qargs["out"]
    if form == "flashmla-out":
        qargs["out"] = flashmla_cache(torch, "cpu")[1]
    if form == "float8-out":
        qargs["out"] = qargs["out"].view(torch.float8_e4m3fn)
    expect_quantize_error(qargs, ValueError, r"^ckv: expected a CUDA tensor, got a tensor on cpu$")


@pytest.mark.parametrize("name,wrong,expected", [
    ("ckv", "float16", "bfloat16"),
    ("kpe", "float32", "bfloat16"),
    ("out", "bfloat16", "uint8 or float8_e4m3fn"),
    ("out", "int8", "uint8 or float8_e4m3fn"),
])
def test_quantizer_wrong_dtype_raises_type_error(torch, qargs, name, wrong, expected):
    qargs[name] = qargs[name].to(getattr(torch, wrong))
    expect_quantize_error(qargs, TypeError, rf"^{name}: expected dtype {expected}, got {wrong}$")


@pytest.mark.parametrize("name", ["ckv", "kpe", "out"])
def test_quantizer_non_tensor_raises_type_error(qargs, name):
    qargs[name] = "garbage"
    expect_quantize_error(qargs, TypeError, rf"^{name}: expected a tensor")


@pytest.mark.parametrize("name,shape,pattern", [
    ("ckv", (PS, LATENT), r"^ckv: expected 3 dimensions \[num_pages, page_size, 512\]"),
    ("kpe", (PS, ROPE), r"^kpe: expected 3 dimensions \[num_pages, page_size, 64\]"),
    ("out", (P * PS, ROW), r"^out: expected 3 dimensions \[num_pages, page_size, 656\] or 4"),
    ("ckv", (P, PS, 256), r"^ckv: expected shape \[\*, \*, 512\] \(the latent width of the FP8 "
                          r"cache\), got \[4, 64, 256\]$"),
    ("kpe", (P + 1, PS, ROPE), r"^kpe: expected shape \[4, 64, 64\] \(num_pages and page_size of "
                               r"ckv, the rope width of the FP8 cache\), got \[5, 64, 64\]$"),
    ("kpe", (P, PS, 32), r"^kpe: expected shape \[4, 64, 64\]"),
    ("out", (P, PS + 1, ROW), r"^out: expected shape \[4, 64, 656\] \(656-byte rows of the FP8 "
                              r"cache; num_pages and page_size of ckv\), got \[4, 65, 656\]$"),
    ("out", (P, PS, 1, 576), r"^out: expected shape \[4, 64, 1, 656\]"),
])
def test_quantizer_bad_shapes_raise_value_error(torch, qargs, name, shape, pattern):
    qargs[name] = torch.zeros(shape, dtype=qargs[name].dtype, device=qargs[name].device)
    expect_quantize_error(qargs, ValueError, pattern)


@pytest.mark.parametrize("width", [512, 600])
def test_quantizer_combined_cache_needs_576_wide_rows(torch, qargs, width):
    qargs["ckv"] = torch.zeros(P, PS, width, dtype=torch.bfloat16, device=qargs["ckv"].device)
    qargs["kpe"] = None
    expect_quantize_error(qargs, ValueError, r"^ckv: expected shape \[\*, \*, 576\] \(kpe is None: "
                                             r"the combined cache, 512 latent \+ 64 rope\)")


def test_quantizer_layout_rules(torch, qargs):
    dev = qargs["ckv"].device
    a = dict(qargs, ckv=torch.zeros(P, PS + 1, LATENT, dtype=torch.bfloat16, device=dev)[:, :PS])
    expect_quantize_error(a, ValueError, r"^ckv: pages must be contiguous runs of slots")
    a = dict(qargs, kpe=torch.zeros(P, PS, ROPE + 4, dtype=torch.bfloat16, device=dev)[..., :ROPE])
    expect_quantize_error(a, ValueError, r"^kpe: strides .* multiples of 8 elements")
    combined = torch.zeros(P, PS + 1, 576, dtype=torch.bfloat16, device=dev)[:, :PS]
    a = dict(qargs, ckv=combined, kpe=None)
    expect_quantize_error(a, ValueError, r"^ckv: pages must be contiguous runs of slots")
    a = dict(qargs, out=torch.zeros(P, PS, 672, dtype=torch.uint8, device=dev)[..., :ROW])
    expect_quantize_error(a, ValueError, r"^out: the rows of a page must be contiguous")
    flat = torch.zeros(P * (PS + 1) * ROW, dtype=torch.uint8, device=dev)
    a = dict(qargs, out=flat.as_strided((P, PS, ROW), (PS * ROW + 8, ROW, 1)))
    expect_quantize_error(a, ValueError, r"^out: the page stride \(stride\[0\]\) must be a multiple "
                                         r"of 16 bytes")
    a = dict(qargs, out=flat[8:8 + P * PS * ROW].view(P, PS, ROW))
    expect_quantize_error(a, ValueError, r"^out: data pointer 0x[0-9a-f]+ is not 16-byte aligned")
    ckv = torch.zeros(P * PS * LATENT + 1, dtype=torch.bfloat16, device=dev)[1:].view(P, PS, LATENT)
    expect_quantize_error(dict(qargs, ckv=ckv), ValueError, r"^ckv: data pointer .* not 16-byte")


def test_quantizer_other_devices_raise_value_error(torch, qargs):
    if not qargs["ckv"].is_cuda:
        pytest.skip("needs a CUDA device")
    dev = qargs["ckv"].device.index
    for name in ("kpe", "out"):
        a = dict(qargs)
        a[name] = a[name].cpu()
        expect_quantize_error(a, ValueError, rf"^{name}: expected a tensor on cuda:{dev} \(the "
                                             rf"device of ckv\), got cpu$")


# ---- torch.ops, fake tensors, tracing -------------------------------------------------------------

def test_torch_ops_are_registered(torch):
    schema = str(torch.ops.mlakit.dsa_sparse_attention_fp8.default._schema)
    assert "Tensor kv_cache" in schema
    assert "float sm_scale, Tensor? attn_sink=None) -> (Tensor, Tensor)" in schema
    schema_out = str(torch.ops.mlakit.dsa_sparse_attention_fp8_out.default._schema)
    assert "Tensor(a" in schema_out and "-> ()" in schema_out
    assert "Tensor? kpe) -> Tensor" in str(torch.ops.mlakit.quantize_dsa_fp8.default._schema)
    schema_out = str(torch.ops.mlakit.quantize_dsa_fp8_out.default._schema)
    assert "Tensor(a" in schema_out and "!) out) -> ()" in schema_out


def test_fake_implementations_give_output_shapes(torch):
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        def t(*shape, dtype=torch.bfloat16):
            return torch.empty(*shape, dtype=dtype, device="cuda")

        cache = mlakit.quantize_dsa_fp8(t(9, 64, LATENT), t(9, 64, ROPE))
        assert cache.shape == (9, 64, ROW) and cache.dtype == torch.uint8
        assert cache.device.type == "cuda"
        assert mlakit.quantize_dsa_fp8(t(9, 64, 576)).shape == (9, 64, ROW)
        padded = t(9, 65, 1, ROW, dtype=torch.float8_e4m3fn)[:, :64]
        assert mlakit.quantize_dsa_fp8(t(9, 64, 576), out=padded) is padded

        q_nope, q_pe, idx = t(5, 16, LATENT), t(5, 16, ROPE), t(5, 2048, dtype=torch.int32)
        out, lse = mlakit.dsa_sparse_attention_fp8(q_nope, q_pe, padded, idx, 0.1)
        assert out.shape == (5, 16, LATENT) and out.dtype == torch.bfloat16
        assert lse.shape == (5, 16) and lse.dtype == torch.float32
        given = (t(5, 16, LATENT), t(5, 16, dtype=torch.float32))
        got = mlakit.dsa_sparse_attention_fp8(q_nope, q_pe, cache, idx, 0.1, out=given[0])
        assert got[0] is given[0] and got[1].shape == (5, 16)


def test_a_stream_is_refused_where_the_operators_run(torch):
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        ckv = torch.empty(2, 64, 576, dtype=torch.bfloat16, device="cuda")
        with pytest.raises(ValueError, match=r"^stream: only eager calls on plain torch.Tensors"):
            mlakit.quantize_dsa_fp8(ckv, stream=0)


def _tiny_inputs(torch):
    bf16 = torch.bfloat16
    return (torch.zeros(3, 16, LATENT, dtype=bf16), torch.zeros(3, 16, ROPE, dtype=bf16),
            torch.zeros(4, 64, 576, dtype=bf16), torch.zeros(3, 128, dtype=torch.int32))


def test_dynamo_traces_the_calls_as_operators(torch):
    """Strict (dynamo) export of code that quantizes and attends: no graph break, the registered
    operators in the graph, fake implementations only (CPU tensors suffice)."""

    class Functional(torch.nn.Module):
        def forward(self, q_nope, q_pe, kv, idx):
            cache = mlakit.quantize_dsa_fp8(kv)
            out, lse = mlakit.dsa_sparse_attention_fp8(q_nope, q_pe, cache, idx, 0.1)
            return out.float() * 2.0, lse + 1.0

    class DestinationPassing(torch.nn.Module):
        def forward(self, q_nope, q_pe, kv, idx, cache, out, lse):
            mlakit.quantize_dsa_fp8(kv, out=cache)
            mlakit.dsa_sparse_attention_fp8(q_nope, q_pe, cache, idx, 0.1, out=out, lse=lse)
            return lse.sum()

    inputs = _tiny_inputs(torch)
    graph = str(torch.export.export(Functional(), inputs, strict=True).graph)
    assert "torch.ops.mlakit.quantize_dsa_fp8.default" in graph
    assert "torch.ops.mlakit.dsa_sparse_attention_fp8.default" in graph
    outputs = (torch.empty(4, 64, ROW, dtype=torch.uint8),
               torch.empty(3, 16, LATENT, dtype=torch.bfloat16), torch.empty(3, 16))
    graph = str(torch.export.export(DestinationPassing(), inputs + outputs, strict=True).graph)
    assert "torch.ops.mlakit.quantize_dsa_fp8_out.default" in graph
    assert "torch.ops.mlakit.dsa_sparse_attention_fp8_out.default" in graph


def test_compiled_calls_reach_the_extension(torch):
    torch._dynamo.reset()
    q_nope, q_pe, kv, idx = _tiny_inputs(torch)

    @torch.compile(fullgraph=True, backend="eager")
    def step(kv):
        return mlakit.quantize_dsa_fp8(kv)

    with pytest.raises(ValueError, match=r"^ckv: expected a CUDA tensor"):
        step(kv)

    @torch.compile(fullgraph=True, backend="eager")
    def attend(q_nope, q_pe, cache, idx):
        return mlakit.dsa_sparse_attention_fp8(q_nope, q_pe, cache, idx, 0.1)

    with pytest.raises(ValueError, match=r"^q_nope: expected a CUDA tensor"):
        attend(q_nope, q_pe, torch.zeros(4, 64, ROW, dtype=torch.uint8), idx)


# ---------------------------------------------------------------------------------- GPU --------

def check(torch, q_nope, q_pe, kv_cache, idx, out, lse, sm_scale=CONTEST_SM_SCALE):
    """out and lse against the fp64 reference on the dequantized cache, under the contest rule."""
    torch.cuda.synchronize()
    ckv, kpe = mlakit.dequantize_dsa_fp8(kv_cache)
    want_out, want_lse = reference(torch, q_nope, q_pe, ckv, kpe, idx, sm_scale)
    assert_contest_close(torch, out, want_out, "output")
    assert_contest_close(torch, lse, want_lse, "lse")


def poisoned_outputs(torch, num_tokens, device, heads=16):
    """Outputs poisoned with NaN, so that an element the kernel does not write fails."""
    out = torch.full((num_tokens, heads, LATENT), math.nan, dtype=torch.bfloat16, device=device)
    lse = torch.full((num_tokens, heads), math.nan, dtype=torch.float32, device=device)
    return out, lse


def attend(torch, q_nope, q_pe, kv_cache, idx, device, **kwargs):
    out, lse = poisoned_outputs(torch, q_nope.shape[0], device, q_nope.shape[1])
    got = mlakit.dsa_sparse_attention_fp8(q_nope, q_pe, kv_cache, idx, CONTEST_SM_SCALE, out=out,
                                          lse=lse, **kwargs)
    assert got[0] is out and got[1] is lse
    return out, lse


@pytest.mark.parametrize("shape", [(37, 64), (300, 1), (1, 64)])
@pytest.mark.parametrize("form", ["separate", "combined"])
def test_quantizer_matches_the_rule_bit_for_bit(torch, gpu, shape, form):
    ckv, kpe = varied_cache(torch, *shape, seed=shape[0], device=gpu)
    if form == "separate":
        got = mlakit.quantize_dsa_fp8(ckv, kpe)
    else:
        got = mlakit.quantize_dsa_fp8(torch.cat([ckv, kpe], dim=-1))
    assert got.shape == (*shape, ROW) and got.dtype == torch.uint8 and got.is_contiguous()
    assert_bytes_equal(torch, got, quantize_reference(torch, ckv, kpe))


def test_quantizer_leaves_page_padding_untouched(torch, gpu):
    """FlashMLA's padded pages as a float8_e4m3fn view: the rows are written, the pad row of each
    page keeps its bytes."""
    ckv, kpe = varied_cache(torch, 9, 64, seed=3, device=gpu)
    buf, view = flashmla_cache(torch, gpu, num_pages=9, page_size=64, fill=0xA5)
    assert mlakit.quantize_dsa_fp8(ckv, kpe, out=view) is view
    torch.cuda.synchronize()
    assert_bytes_equal(torch, buf[:, :64, 0], quantize_reference(torch, ckv, kpe))
    assert bool((buf[:, 64] == 0xA5).all())


def test_quantizer_of_an_empty_cache(torch, gpu):
    got = mlakit.quantize_dsa_fp8(torch.zeros(0, 64, 576, dtype=torch.bfloat16, device=gpu))
    assert got.shape == (0, 64, ROW) and got.dtype == torch.uint8


def test_quantizer_runs_on_the_stream_given(torch, gpu):
    """ckv is written on a side stream behind a long sleep; the quantizer is told that stream
    (a torch.cuda.Stream, then its raw handle) while another stream is current."""
    ckv, kpe = varied_cache(torch, 8, 64, seed=4, device=gpu)
    want = quantize_reference(torch, ckv, kpe)
    for as_handle in (False, True):
        late = torch.zeros_like(ckv)
        out = torch.zeros(8, 64, ROW, dtype=torch.uint8, device=gpu)
        torch.cuda.synchronize()
        side = torch.cuda.Stream(device=gpu)
        with torch.cuda.stream(side):
            torch.cuda._sleep(100_000_000)  # ~50 ms of spinning at H200 clocks
            late.copy_(ckv)
        mlakit.quantize_dsa_fp8(late, kpe, out=out,
                                stream=side.cuda_stream if as_handle else side)
        side.synchronize()
        assert_bytes_equal(torch, out, want)


@pytest.mark.parametrize("case", list(CASES))
def test_matches_the_reference_on_the_dequantized_cache(torch, gpu, case):
    q_nope, q_pe, ckv, kpe, idx = make_inputs(torch, device=gpu, seed=len(case), **CASES[case])
    kv = mlakit.quantize_dsa_fp8(ckv, kpe)
    out, lse = attend(torch, q_nope, q_pe, kv, idx, gpu)
    check(torch, q_nope, q_pe, kv, idx, out, lse)
    empty = (idx < 0).all(dim=1)
    assert bool((out[empty] == 0).all()) and bool(torch.isneginf(lse[empty]).all())


@pytest.mark.parametrize("heads", [32, 64, 128])
@pytest.mark.parametrize("case", ["T1-full", "T3-empty-rows"])
def test_every_head_count_matches_the_reference(torch, gpu, heads, case):
    q_nope, q_pe, ckv, kpe, idx = make_inputs(torch, device=gpu, seed=heads + len(case), heads=heads,
                                              **CASES[case])
    kv = mlakit.quantize_dsa_fp8(ckv, kpe)
    out, lse = attend(torch, q_nope, q_pe, kv, idx, gpu)
    check(torch, q_nope, q_pe, kv, idx, out, lse)


@pytest.mark.parametrize("tokens,heads", [(6, 128), (8, 128), (16, 64)])
def test_many_tokens_and_heads_take_64_heads_per_cta(torch, gpu, tokens, heads):
    """From T x H = 1024 (768 at 128 heads) the default tiling runs 64 heads per CTA (producers
    dequantizing the rows into bf16 stages, wgmma): full rows, empty rows, padding anywhere and
    repeats, against the reference, and bitwise the same on a second call."""
    info = mlakit.plan_info(tokens, 64, device=gpu.index, num_heads=heads, kv="fp8")
    assert info["tiling"].endswith("h64"), info
    valid = ([2048] * 4 + [0, 9, 700, 2048] * tokens)[:tokens]  # rows 0-3: the edge cases below
    q_nope, q_pe, ckv, kpe, idx = make_inputs(torch, tokens, device=gpu, seed=tokens + heads, heads=heads,
                                              valid=valid)
    mark_index_edge_cases(idx, num_slots=ckv.shape[0] * ckv.shape[1])
    kv = mlakit.quantize_dsa_fp8(ckv, kpe)
    out, lse = attend(torch, q_nope, q_pe, kv, idx, gpu)
    check(torch, q_nope, q_pe, kv, idx, out, lse)
    again = attend(torch, q_nope, q_pe, kv, idx, gpu)
    torch.cuda.synchronize()
    assert torch.equal(again[0], out) and torch.equal(again[1], lse)


@pytest.mark.parametrize("topk", [1023, 1022])
def test_64_heads_per_cta_with_a_topk_that_is_no_multiple_of_4(torch, gpu, topk):
    """The 64-head producers read four slots in one 16-byte load where a CTA's slot array is
    aligned; a top-k that is no multiple of 4 leaves it unaligned, and they read one by one. (Index
    rows must start 16 bytes apart: a view of the first `topk` columns of a 1024-wide tensor.)"""
    tokens, heads = 16, 64
    assert mlakit.plan_info(tokens, 64, topk=topk, device=gpu.index, num_heads=heads,
                            kv="fp8")["tiling"].endswith("h64")
    valid = [topk, topk - 5, 1, 0] * (tokens // 4)
    q_nope, q_pe, ckv, kpe, wide = make_inputs(torch, tokens, topk=1024, device=gpu, seed=topk,
                                               heads=heads, valid=valid)
    idx = wide[:, :topk]
    assert idx.stride(0) == 1024
    kv = mlakit.quantize_dsa_fp8(ckv, kpe)
    out, lse = attend(torch, q_nope, q_pe, kv, idx, gpu)
    check(torch, q_nope, q_pe, kv, idx, out, lse)


def test_padding_anywhere_repeats_and_invalid_indices(torch, gpu):
    q_nope, q_pe, ckv, kpe, idx = make_inputs(torch, 4, device=gpu, seed=30)
    mark_index_edge_cases(idx, num_slots=ckv.shape[0] * ckv.shape[1])
    kv = mlakit.quantize_dsa_fp8(ckv, kpe)
    out, lse = attend(torch, q_nope, q_pe, kv, idx, gpu)
    check(torch, q_nope, q_pe, kv, idx, out, lse)


def test_flashmla_padded_cache_gives_the_same_bits(torch, gpu):
    """FlashMLA's [num_pages, page_size + 1, 1, 656] float8_e4m3fn allocation, viewed as
    [num_pages, page_size, 1, 656], with NaN bytes in the pad rows: the same output as the
    contiguous uint8 cache, bit for bit."""
    q_nope, q_pe, ckv, kpe, idx = make_inputs(torch, 4, device=gpu, seed=31, valid=[2048, 9, 0, 700])
    dense = mlakit.quantize_dsa_fp8(ckv, kpe)
    _, padded = flashmla_cache(torch, gpu, num_pages=ckv.shape[0], page_size=ckv.shape[1],
                               fill=0x7F)
    mlakit.quantize_dsa_fp8(ckv, kpe, out=padded)
    want = attend(torch, q_nope, q_pe, dense, idx, gpu)
    got = attend(torch, q_nope, q_pe, padded, idx, gpu)
    torch.cuda.synchronize()
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    check(torch, q_nope, q_pe, dense, idx, *want)


def test_two_runs_are_bitwise_equal(torch, gpu):
    q_nope, q_pe, ckv, kpe, idx = make_inputs(torch, 8, device=gpu, seed=32)
    kv = mlakit.quantize_dsa_fp8(ckv, kpe)
    first = attend(torch, q_nope, q_pe, kv, idx, gpu)
    second = attend(torch, q_nope, q_pe, kv, idx, gpu)
    torch.cuda.synchronize()
    assert torch.equal(first[0], second[0]) and torch.equal(first[1], second[1])


def test_missing_outputs_are_allocated(torch, gpu):
    q_nope, q_pe, ckv, kpe, idx = make_inputs(torch, 2, device=gpu, seed=33)
    kv = mlakit.quantize_dsa_fp8(ckv, kpe)
    out, lse = mlakit.dsa_sparse_attention_fp8(q_nope, q_pe, kv, idx, CONTEST_SM_SCALE)
    assert out.shape == (2, 16, LATENT) and out.dtype == torch.bfloat16 and out.device == gpu
    assert lse.shape == (2, 16) and lse.dtype == torch.float32 and lse.device == gpu
    check(torch, q_nope, q_pe, kv, idx, out, lse)


def test_zero_tokens_return_empty_outputs(torch, gpu):
    q_nope, q_pe, ckv, kpe, idx = make_inputs(torch, 0, device=gpu)
    out, lse = mlakit.dsa_sparse_attention_fp8(q_nope, q_pe, mlakit.quantize_dsa_fp8(ckv, kpe),
                                               idx, CONTEST_SM_SCALE)
    assert out.shape == (0, 16, LATENT) and lse.shape == (0, 16)


def test_a_preallocated_call_allocates_nothing(torch, gpu):
    q_nope, q_pe, ckv, kpe, idx = make_inputs(torch, 4, device=gpu, seed=34)
    kv = mlakit.quantize_dsa_fp8(ckv, kpe)
    out, lse = poisoned_outputs(torch, 4, gpu)
    mlakit.dsa_sparse_attention_fp8(q_nope, q_pe, kv, idx, CONTEST_SM_SCALE, out=out, lse=lse)
    torch.cuda.synchronize()
    allocated, stats = torch.cuda.memory_allocated(gpu), mlakit._C.cache_stats()
    for _ in range(20):
        mlakit.quantize_dsa_fp8(ckv, kpe, out=kv)
        mlakit.dsa_sparse_attention_fp8(q_nope, q_pe, kv, idx, CONTEST_SM_SCALE, out=out, lse=lse)
    torch.cuda.synchronize()
    assert torch.cuda.memory_allocated(gpu) == allocated
    assert mlakit._C.cache_stats() == stats


def test_attention_runs_on_the_stream_given(torch, gpu):
    q_nope, q_pe, ckv, kpe, idx = make_inputs(torch, 2, device=gpu, seed=35)
    kv = mlakit.quantize_dsa_fp8(ckv, kpe)
    late = torch.zeros_like(q_nope)
    torch.cuda.synchronize()
    side = torch.cuda.Stream(device=gpu)
    with torch.cuda.stream(side):
        torch.cuda._sleep(100_000_000)  # ~50 ms of spinning at H200 clocks
        late.copy_(q_nope)
    out, lse = attend(torch, late, q_pe, kv, idx, gpu, stream=side)
    side.synchronize()
    check(torch, q_nope, q_pe, kv, idx, out, lse)


def test_cuda_graph_requantizes_and_attends_on_new_inputs(torch, gpu):
    """One graph captures the quantizer writing FlashMLA's padded cache in place and the attention
    reading it; each replay gets new bf16 caches, queries and indices (same shapes)."""
    static = make_inputs(torch, 4, num_pages=32, device=gpu, seed=36)
    q_nope, q_pe, ckv, kpe, idx = static
    _, kv = flashmla_cache(torch, gpu, num_pages=32, page_size=64)
    out, lse = poisoned_outputs(torch, 4, gpu)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        mlakit.quantize_dsa_fp8(ckv, kpe, out=kv)
        mlakit.dsa_sparse_attention_fp8(q_nope, q_pe, kv, idx, CONTEST_SM_SCALE, out=out, lse=lse)
    for seed, valid in ((37, [2048, 7, 0, 1500]), (38, [5, 2048, 2048, 0]), (39, [1, 64, 65, 1999])):
        fresh = make_inputs(torch, 4, num_pages=32, device=gpu, seed=seed, valid=valid)
        for dst, src in zip(static, fresh):
            dst.copy_(src)
        out.fill_(math.nan)
        lse.fill_(math.nan)
        graph.replay()
        torch.cuda.synchronize()
        assert_bytes_equal(torch, kv[:, :, 0], quantize_reference(torch, fresh[2], fresh[3]))
        check(torch, fresh[0], fresh[1], kv, fresh[4], out, lse)


def test_torch_ops_match_the_direct_calls(torch, gpu):
    q_nope, q_pe, ckv, kpe, idx = make_inputs(torch, 3, device=gpu, seed=40)
    kv = mlakit.quantize_dsa_fp8(ckv, kpe)
    assert torch.equal(torch.ops.mlakit.quantize_dsa_fp8(ckv, kpe), kv)
    kv_out = torch.empty_like(kv)
    torch.ops.mlakit.quantize_dsa_fp8_out(torch.cat([ckv, kpe], dim=-1), None, kv_out)
    out, lse = mlakit.dsa_sparse_attention_fp8(q_nope, q_pe, kv, idx, CONTEST_SM_SCALE)
    op_out, op_lse = torch.ops.mlakit.dsa_sparse_attention_fp8(q_nope, q_pe, kv, idx,
                                                               CONTEST_SM_SCALE)
    dps_out, dps_lse = poisoned_outputs(torch, 3, gpu)
    torch.ops.mlakit.dsa_sparse_attention_fp8_out(q_nope, q_pe, kv, idx, CONTEST_SM_SCALE,
                                                  dps_out, dps_lse)
    torch.cuda.synchronize()
    assert torch.equal(kv_out, kv)
    assert torch.equal(op_out, out) and torch.equal(op_lse, lse)
    assert torch.equal(dps_out, out) and torch.equal(dps_lse, lse)


def test_opcheck(torch, gpu):
    q_nope, q_pe, ckv, kpe, idx = make_inputs(torch, 2, num_pages=16, device=gpu, seed=41)
    torch.library.opcheck(torch.ops.mlakit.quantize_dsa_fp8.default, (ckv, kpe))
    kv = mlakit.quantize_dsa_fp8(ckv, kpe)
    torch.library.opcheck(torch.ops.mlakit.quantize_dsa_fp8_out.default, (ckv, kpe, kv))
    torch.library.opcheck(torch.ops.mlakit.dsa_sparse_attention_fp8.default,
                          (q_nope, q_pe, kv, idx, CONTEST_SM_SCALE))
    out, lse = poisoned_outputs(torch, 2, gpu)
    torch.library.opcheck(torch.ops.mlakit.dsa_sparse_attention_fp8_out.default,
                          (q_nope, q_pe, kv, idx, CONTEST_SM_SCALE, out, lse))


def test_torch_compile_full_graph(torch, gpu):
    def step(q_nope, q_pe, kv, idx):
        cache = mlakit.quantize_dsa_fp8(kv)
        out, lse = mlakit.dsa_sparse_attention_fp8(q_nope, q_pe, cache, idx, CONTEST_SM_SCALE)
        return out.float() * 2.0, lse + 1.0

    torch._dynamo.reset()
    q_nope, q_pe, ckv, kpe, idx = make_inputs(torch, 4, device=gpu, seed=42)
    args = (q_nope, q_pe, torch.cat([ckv, kpe], dim=-1), idx)
    want = step(*args)
    got = torch.compile(step, fullgraph=True)(*args)
    torch.cuda.synchronize()
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])


def test_check_indices_on_the_fp8_cache(torch, gpu):
    _, _, ckv, kpe, idx = make_inputs(torch, 3, device=gpu, seed=43, valid=[2048, 5, 0])
    _, kv = flashmla_cache(torch, gpu, num_pages=ckv.shape[0], page_size=ckv.shape[1])
    mlakit.quantize_dsa_fp8(ckv, kpe, out=kv)
    assert mlakit.check_indices(idx, kv) is None
    idx[1, 7] = ckv.shape[0] * ckv.shape[1]
    with pytest.raises(ValueError, match=r"^sparse_indices: 1 entries .* first at \[1, 7\]"):
        mlakit.check_indices(idx, kv)


def test_plan_info_of_the_fp8_cache(torch, gpu):
    info = mlakit.plan_info(8, 64, device=gpu.index, kv="fp8")
    assert info["kernel_key"].startswith("dsa_decode.") and ".fp8" in info["kernel_key"]
    assert info["problem"].endswith(" kv=fp8")


# ---- attn_sink: the argument, and the same result on every route ---------------------------------

@pytest.mark.parametrize("make,error,pattern", [
    (lambda t, d: t.zeros(16, dtype=t.bfloat16, device=d), TypeError,
     r"^attn_sink: expected dtype float32, got bfloat16$"),
    (lambda t, d: t.zeros(1, 16, device=d), ValueError, r"^attn_sink: expected 1 dimensions"),
    (lambda t, d: t.zeros(17, device=d), ValueError, r"^attn_sink: expected shape \[16\]"),
    (lambda t, d: t.zeros(32, device=d)[::2], ValueError, r"^attn_sink: .*contiguous"),
    (lambda t, d: [0.0] * 16, TypeError, r"^attn_sink: expected a tensor"),
])
def test_bad_attn_sink_raises_naming_it(torch, args, make, error, pattern):
    a = dict(args)
    out, lse = a.pop("out"), a.pop("lse")
    with pytest.raises(error, match=pattern):
        mlakit.dsa_sparse_attention_fp8(*a.values(), out=out, lse=lse,
                                        attn_sink=make(torch, args["q_nope"].device))


def sink_reference(torch, out, lse, sink):
    """The sink applied to a call without it: out * e^lse / (e^lse + e^sink) (lse base 2 -> e)."""
    factor = torch.sigmoid(lse.double() * math.log(2.0) - sink.double()[None, :])
    factor = torch.where(torch.isneginf(lse), torch.zeros_like(factor), factor)
    return out.double() * factor[..., None]


def test_attn_sink_through_torch_ops_compile_and_a_graph_replay(torch, gpu):
    q_nope, q_pe, ckv, kpe, idx = make_inputs(torch, 4, device=gpu, seed=44, valid=[2048, 9, 0, 1])
    kv = mlakit.quantize_dsa_fp8(ckv, kpe)
    sink = torch.randn(16, device=gpu)
    out, lse = mlakit.dsa_sparse_attention_fp8(q_nope, q_pe, kv, idx, CONTEST_SM_SCALE,
                                               attn_sink=sink)
    plain_out, plain_lse = mlakit.dsa_sparse_attention_fp8(q_nope, q_pe, kv, idx, CONTEST_SM_SCALE)
    torch.cuda.synchronize()
    assert torch.equal(lse, plain_lse)
    assert_contest_close(torch, out, sink_reference(torch, plain_out, plain_lse, sink), "out")
    op_out, op_lse = torch.ops.mlakit.dsa_sparse_attention_fp8(q_nope, q_pe, kv, idx,
                                                               CONTEST_SM_SCALE, sink)
    dps_out, dps_lse = poisoned_outputs(torch, 4, gpu)
    torch.ops.mlakit.dsa_sparse_attention_fp8_out(q_nope, q_pe, kv, idx, CONTEST_SM_SCALE,
                                                  dps_out, dps_lse, sink)

    def step(q_nope, q_pe, kv, idx, sink):
        return mlakit.dsa_sparse_attention_fp8(q_nope, q_pe, kv, idx, CONTEST_SM_SCALE,
                                               attn_sink=sink)

    torch._dynamo.reset()
    got = torch.compile(step, fullgraph=True)(q_nope, q_pe, kv, idx, sink)
    torch.cuda.synchronize()
    for o, l in ((op_out, op_lse), (dps_out, dps_lse), got):
        assert torch.equal(o, out) and torch.equal(l, lse)
    # A graph replays with new sinks (and outputs poisoned before each replay).
    g_out, g_lse = poisoned_outputs(torch, 4, gpu)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        mlakit.dsa_sparse_attention_fp8(q_nope, q_pe, kv, idx, CONTEST_SM_SCALE, out=g_out,
                                        lse=g_lse, attn_sink=sink)
    for value in (math.inf, -math.inf, 0.5):
        sink.fill_(value)
        g_out.fill_(math.nan)
        graph.replay()
        torch.cuda.synchronize()
        assert_contest_close(torch, g_out, sink_reference(torch, plain_out, plain_lse, sink),
                             f"out, sink {value}")
        assert torch.equal(g_lse, plain_lse)


# ---- caches written by other quantizers: scale = amax / 448, not rounded to a power of two --------

def quantize_unrounded(torch, ckv, kpe, out_rows):
    """Writes ckv / kpe into `out_rows` (uint8 [P, PS, 656], any page stride) the way engines'
    cache writers do without a UE8M0 option: scale = max(amax / 448, 1e-4) in fp32 as it is.
    Returns the dequantized latent (e4m3 x scale in fp32), the reference's cache."""
    num_pages, page_size = ckv.shape[:2]
    x = ckv.float().reshape(num_pages, page_size, LATENT // TILE, TILE)
    scale = torch.clamp_min(x.abs().amax(dim=-1) / 448.0, 1e-4)
    codes = (x / scale[..., None]).to(torch.float8_e4m3fn)
    out_rows[..., :LATENT] = codes.view(torch.uint8).reshape(num_pages, page_size, LATENT)
    out_rows[..., LATENT:LATENT + 16] = scale.contiguous().view(torch.uint8)
    out_rows[..., LATENT + 16:] = kpe.contiguous().view(torch.uint8)
    return (codes.float() * scale[..., None]).reshape(num_pages, page_size, LATENT)


# 16 and 32 heads, and 64 / 128 heads at T x H below the 64-head CTA's threshold, run the 16-head
# CTAs: the slot's fp32 scale is applied outside the MMA (P x scale rounded to bf16 as P is), so the
# contest rule holds against the reference on the dequantized cache for any scale. The 64-head CTAs round e4m3 x scale to
# bf16 (exact only for powers of two; docs/dsa-contract.md, "Scales that are not powers of two"):
# for them this checks the bound measured, max |error| <= 0.05 in output and lse on randn rows
# (FlashMLA: 0.042 on the same rows).
@pytest.mark.parametrize("heads,tokens,exact", [(16, 4, True), (16, 40, True), (32, 24, True),
                                                (64, 2, True), (128, 2, True), (64, 20, False),
                                                (128, 8, False)])
@pytest.mark.parametrize("padded", [False, True])
def test_scales_that_are_not_powers_of_two(torch, gpu, heads, tokens, exact, padded):
    q_nope, q_pe, ckv, kpe, idx = make_inputs(torch, tokens, num_pages=32, heads=heads, device=gpu,
                                              seed=heads * 100 + tokens)
    if padded:
        buf, _ = flashmla_cache(torch, gpu, num_pages=32, page_size=64, fill=0x7F)
        rows = buf[:, :64, 0]
    else:
        rows = torch.zeros(32, 64, ROW, dtype=torch.uint8, device=gpu)
    deq = quantize_unrounded(torch, ckv, kpe, rows)
    assert not bool((torch.frexp(rows[..., LATENT:LATENT + 16].contiguous().view(torch.float32))[0]
                     == 0.5).all()), "the scales are not all powers of two"
    info = mlakit.plan_info(tokens, 32, 64, 2048, num_heads=heads, kv="fp8")
    assert ("h64" in info["tiling"]) != exact, info["tiling"]
    out, lse = attend(torch, q_nope, q_pe, rows, idx, gpu)
    want_out, want_lse = reference(torch, q_nope, q_pe, deq, kpe, idx, CONTEST_SM_SCALE)
    torch.cuda.synchronize()
    if exact:
        assert_contest_close(torch, out, want_out, "output")
        assert_contest_close(torch, lse, want_lse, "lse")
    else:
        assert float((out.double() - want_out).abs().max()) <= 0.05
        assert float((lse.double() - want_lse).abs().max()) <= 0.05
