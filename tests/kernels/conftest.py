"""The oracle's eager runs get a fresh eager environment, torn down after each test so no
VM thread outlives it (the leak check); ``cuda_device`` is set before the VM starts."""

from __future__ import annotations

import pytest

from actorflow import eager


@pytest.fixture
def fresh_vm(cuda_device):
    eager.shutdown(scheduler="inline")
    yield
    problems = eager.shutdown()
    assert not problems, problems
