"""Each autograd test gets a fresh eager environment and tears it down afterwards, so no VM
thread outlives its test (the leak check); a CUDA device is the emulated one unless CuPy
and a GPU are here."""

from __future__ import annotations

import importlib.util
import os

import pytest

from actorflow import eager

if importlib.util.find_spec("cupy") is None:
    os.environ.setdefault("ACTORFLOW_DEVICE", "emulated")


@pytest.fixture(autouse=True)
def fresh_vm():
    eager.shutdown(scheduler="inline")
    yield
    problems = eager.shutdown()
    assert not problems, problems
