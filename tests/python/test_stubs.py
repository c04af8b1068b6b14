"""The type stubs shipped in the wheel (python/mlakit/_api.pyi, _C.pyi, py.typed) say what the
runtime does: the same functions with the same parameters, so an editor's hints are not stale."""

import ast
import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "python" / "mlakit"


def stub_functions(path):
    """{name: [(parameter, kind, has_default)]} of a stub's top-level functions."""
    out = {}
    for node in ast.parse(Path(path).read_text()).body:
        if not isinstance(node, ast.FunctionDef):
            continue
        a = node.args
        params = []
        positional = a.posonlyargs + a.args
        first_default = len(positional) - len(a.defaults)
        for i, p in enumerate(positional):
            params.append((p.arg, "positional", i >= first_default))
        for p, d in zip(a.kwonlyargs, a.kw_defaults):
            params.append((p.arg, "keyword", d is not None))
        out[node.name] = params
    return out


def runtime_parameters(fn):
    kinds = {inspect.Parameter.KEYWORD_ONLY: "keyword"}
    return [(p.name, kinds.get(p.kind, "positional"), p.default is not inspect.Parameter.empty)
            for p in inspect.signature(fn).parameters.values()]


@pytest.fixture(scope="module")
def built():
    build = os.environ.get("MLAKIT_BUILD_DIR")
    if not build or not (Path(build) / "python" / "mlakit").is_dir():
        pytest.skip("needs the built binding (MLAKIT_BUILD_DIR, set by scripts/test_python.sh)")
    return Path(build) / "python"


def test_the_package_is_marked_typed():
    assert (PKG / "py.typed").is_file()
    assert (PKG / "_C.pyi").is_file() and (PKG / "_api.pyi").is_file()


def test_the_public_stub_matches_the_runtime_signatures(built):
    sys.path.insert(0, str(built))
    try:
        import mlakit
        from mlakit import _api
    finally:
        sys.path.remove(str(built))
    stubs = stub_functions(PKG / "_api.pyi")
    public = [n for n in mlakit.__all__ if n != "__version__"]
    assert sorted(n for n in stubs) == sorted(public), "every public call has a stub, and only those"
    for name, params in stubs.items():
        assert params == runtime_parameters(getattr(_api, name)), name


def test_the_compiled_module_stub_matches_what_stubgen_writes(built, tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(built), str(ROOT / ".deps" / "python"),
                                                       os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-m", "nanobind.stubgen", "-m", "mlakit._C", "-o",
                        str(tmp_path / "_C.pyi")], env=env, capture_output=True, text=True, timeout=300,
                       cwd=tmp_path)
    if r.returncode != 0 and "No module named" in r.stderr and "nanobind" in r.stderr:
        pytest.skip("nanobind is not importable (its stubgen writes the reference)")
    assert r.returncode == 0, r.stderr
    assert stub_functions(tmp_path / "_C.pyi") == stub_functions(PKG / "_C.pyi"), \
        "python/mlakit/_C.pyi is stale: regenerate it (its docstring says how)"
