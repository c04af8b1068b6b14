"""Fixtures of the binding's tests.

* `torch`: the torch module; the test skips where PyTorch is not installed.
* `gpu`: a CUDA device of compute capability 9.0 (the kernels are built for sm_90a); skips
  elsewhere.
* `any_device`: the GPU if there is one, else the CPU. Every argument check except the device
  check reads only metadata, so the contract tests run on CPU tensors too (and then assert the
  error that comes before the device check).
"""

import pytest


@pytest.fixture(scope="session")
def torch():
    return pytest.importorskip("torch", reason="PyTorch is not installed")


@pytest.fixture(scope="session")
def gpu(torch):
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device (the kernels need an sm_90 GPU)")
    capability = torch.cuda.get_device_capability()
    if capability != (9, 0):
        pytest.skip(f"the kernels are built for sm_90a; this GPU is sm_{capability[0]}{capability[1]}")
    return torch.device("cuda", torch.cuda.current_device())


@pytest.fixture(scope="session")
def any_device(torch):
    if torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")

