"""Eager tests run against both schedulers; each test gets a fresh eager environment and
tears it down afterwards, so no VM thread outlives its test (the leak check)."""

from __future__ import annotations

import pytest

from actorflow import eager


@pytest.fixture(autouse=True, params=["inline", "thread"])
def scheduler(request):
    eager.shutdown(scheduler=request.param)
    yield request.param
    problems = eager.shutdown()
    assert not problems, problems


@pytest.fixture
def vm(scheduler):
    return eager.get_vm()
