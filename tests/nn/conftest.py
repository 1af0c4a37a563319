"""Each autograd test gets a fresh eager environment and tears it down afterwards, so no VM
thread outlives its test (the leak check); a CUDA device is the emulated one unless CuPy
and a GPU are here."""

from __future__ import annotations

import pytest

from actorflow import eager


@pytest.fixture(autouse=True)
def fresh_vm(cuda_device):  # a CUDA device for the tests that use one (set, then restored)
    eager.shutdown(scheduler="inline")
    yield
    problems = eager.shutdown()
    assert not problems, problems
