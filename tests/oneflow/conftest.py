"""OneFlow-compatibility tests run eager ops: each test gets a fresh eager environment and
tears it down afterwards (no VM thread outlives its test), with the device restored."""

from __future__ import annotations

import os

import pytest

from actorflow import collective, eager


@pytest.fixture(autouse=True)
def fresh_eager():
    eager.shutdown()
    yield
    problems = eager.shutdown()
    if collective.is_initialized():  # a world of one made by placement.all / global tensors
        collective.destroy()
    assert not problems, problems


@pytest.fixture
def emulated_device():
    """``ACTORFLOW_DEVICE=emulated`` for a test (no GPU here), restored afterwards."""
    old = os.environ.get("ACTORFLOW_DEVICE")
    os.environ["ACTORFLOW_DEVICE"] = "emulated"
    eager.shutdown()
    yield
    eager.shutdown()
    if old is None:
        os.environ.pop("ACTORFLOW_DEVICE", None)
    else:
        os.environ["ACTORFLOW_DEVICE"] = old
