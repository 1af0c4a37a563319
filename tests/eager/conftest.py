"""Eager tests run on both cores (the compiled one and the Python reference) and, on the
Python one, both schedulers; each test gets a fresh eager environment and tears it down
afterwards, so no VM thread outlives its test (the leak check)."""

from __future__ import annotations

import pytest

from actorflow import eager
from actorflow.eager.core import NATIVE

OFF = "the compiled core is not in use (ACTORFLOW_CORE=python, or not built)"
RUNS = [pytest.param(("native", "inline"), id="native",
                     marks=pytest.mark.skipif(NATIVE is None, reason=OFF)),
        pytest.param(("python", "inline"), id="inline"),
        pytest.param(("python", "thread"), id="thread")]


@pytest.fixture(autouse=True, params=RUNS)
def scheduler(request):
    core, sched = request.param
    if "cuda_device" in request.fixturenames:  # set before the VM, restored after it
        request.getfixturevalue("cuda_device")
    eager.shutdown(scheduler=sched, core=core)
    yield sched
    problems = eager.shutdown()
    assert not problems, problems


@pytest.fixture
def vm(scheduler):
    return eager.get_vm()
