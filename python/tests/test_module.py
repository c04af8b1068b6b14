"""What holds on every machine that built the binding, with or without PyTorch or a GPU."""

import array
import ast
import inspect
import json
import re
from pathlib import Path

import pytest

import mlakit
import mlakit.flashinfer_bench as fib
from dsa_ref import run_python

DEFINITION_INPUTS = ["q_nope", "q_pe", "ckv_cache", "kpe_cache", "sparse_indices", "sm_scale"]
TENSOR_ARGS = ["q_nope", "q_pe", "ckv_cache", "kpe_cache", "sparse_indices"]


def test_module_imports_with_version_and_entry_points():
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", mlakit.__version__)
    assert mlakit.__version__ == mlakit._C.__version__
    # The one place the version is written: project(mlakit VERSION ...) in CMakeLists.txt.
    cmake = (Path(__file__).resolve().parents[2] / "CMakeLists.txt").read_text()
    assert re.search(r"^project\(mlakit VERSION (\S+?) ", cmake, re.M).group(1) == mlakit.__version__
    for name in ("dsa_sparse_attention", "dsa_sparse_attention_fp8", "quantize_dsa_fp8",
                 "dequantize_dsa_fp8", "check_indices", "plan_info", "empty_cache"):
        assert callable(getattr(mlakit, name)), name
    assert mlakit._C.cuda_runtime_version >= 12000


@pytest.mark.parametrize("position", range(5))
@pytest.mark.parametrize("garbage", [7, "q", [1, 2, 3], None, object()], ids=repr)
def test_non_tensor_argument_raises_type_error_naming_it(position, garbage):
    # Garbage everywhere: the first tensor argument is the one reported.
    args = [garbage] * 5 + [0.1]
    with pytest.raises(TypeError, match=r"^q_nope: expected a tensor"):
        mlakit.dsa_sparse_attention(*args)
    # Garbage in one position after valid-looking buffers: that argument is named. (A CPU buffer
    # of the wrong dtype fails the dtype check later, so only the import error can come first.)
    good = memoryview(array.array("h", [0] * 16)).cast("B").cast("h", shape=[1, 16, 1])
    args = [good] * 5 + [0.1]
    args[position] = garbage
    with pytest.raises(TypeError, match="^" + TENSOR_ARGS[position] + ": expected a tensor"):
        mlakit.dsa_sparse_attention(*args)


def test_wrong_dtype_from_a_buffer_raises_type_error():
    # The buffer protocol reaches the extension as DLPack too; int16 is no bfloat16.
    buf = memoryview(array.array("h", [0] * (2 * 16 * 512))).cast("B").cast("h", shape=[2, 16, 512])
    with pytest.raises(TypeError, match=r"^q_nope: expected dtype bfloat16, got int16$"):
        mlakit.dsa_sparse_attention(buf, buf, buf, buf, buf, 0.1)


def test_describe_tensor_reads_dlpack_metadata():
    d = mlakit._C.describe_tensor(array.array("i", range(8)))
    assert d["dtype"] == "int32" and d["shape"] == (8,) and d["strides"] == (1,)
    assert d["device"] == "cpu"


def test_plan_info_reports_a_readable_reason_for_a_bad_problem():
    with pytest.raises(ValueError, match="num_tokens"):
        mlakit.plan_info(0, 16, device=0)


def test_import_works_without_torch():
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import mlakit\n"
        "info = mlakit.torch_integration()\n"
        "assert info['loaded'] is False and 'torch' in info['error'], info\n"
        "try:\n"
        "    mlakit.dsa_sparse_attention(1, 2, 3, 4, 5, 0.1)\n"
        "except TypeError as e:\n"
        "    assert str(e).startswith('q_nope: expected a tensor'), e\n"
        "else:\n"
        "    raise AssertionError('no TypeError')\n"
        "try:\n"
        "    mlakit.quantize_dsa_fp8(1)\n"
        "except TypeError as e:\n"
        "    assert str(e).startswith('ckv: expected a tensor'), e\n"
        "else:\n"
        "    raise AssertionError('no TypeError')\n"
        "try:\n"
        "    mlakit.dequantize_dsa_fp8(1)\n"
        "except ImportError as e:\n"
        "    assert 'needs PyTorch' in str(e), e\n"
        "else:\n"
        "    raise AssertionError('no ImportError')\n"
        "print('ok', mlakit.__version__)\n")
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ok ")


def test_import_first_in_a_fresh_process_then_torch():
    # `import mlakit` before anything else used to load the toolkit's CUDA runtime ahead of
    # torch's own copy, and torch's import then crashed the process.
    code = (
        "import mlakit\n"
        "try:\n"
        "    import torch\n"
        "    torch.zeros(1)\n"
        "except ImportError:\n"
        "    pass\n"
        "print('ok', mlakit.__version__)\n")
    proc = run_python(code)
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    assert proc.stdout.startswith("ok ")


def test_flashinfer_bench_entry_points_have_the_definition_signature():
    assert list(inspect.signature(fib.run).parameters) == DEFINITION_INPUTS
    assert list(inspect.signature(fib.run_dps).parameters) == DEFINITION_INPUTS + ["output", "lse"]


@pytest.mark.parametrize("dps", [True, False])
def test_flashinfer_bench_solution_is_well_formed(dps):
    doc = fib.solution(fib.DEFINITIONS[0], dps=dps)
    json.dumps(doc)
    assert doc["definition"] == "dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64"
    spec = doc["spec"]
    assert spec["language"] == "python" and spec["destination_passing_style"] is dps
    entry_file, entry_func = spec["entry_point"].split("::")
    (source,) = [s for s in doc["sources"] if s["path"] == entry_file]
    tree = ast.parse(source["content"])
    (imp,) = [n for n in tree.body if isinstance(n, ast.ImportFrom)]
    assert imp.module == "mlakit.flashinfer_bench"
    (alias,) = imp.names
    assert alias.asname == entry_func and hasattr(fib, alias.name)
    assert alias.name == ("run_dps" if dps else "run")


def test_flashinfer_bench_cli_writes_json(tmp_path):
    out = tmp_path / "solution.json"
    assert fib.main(["--definition", fib.DEFINITIONS[1], "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["definition"].endswith("_ps1") and doc["spec"]["destination_passing_style"] is True
    with pytest.raises(ValueError, match="definition"):
        fib.solution("mla_paged_decode_h16_ckv512_kpe64_ps64")
