"""The GPU tests: on a real GPU when CuPy and a device are there, else on the emulated device.

``python -m pytest tests/gpu -q`` is the command a person with a GPU runs; here (no GPU,
no CuPy) the same tests run on the emulated device, an array module with CuPy's rules
backed by numpy.  ``ACTORFLOW_DEVICE`` set by the caller wins (``emulated`` forces the
emulation on a GPU machine).  Every test here sets it through the ``cuda_device`` fixture,
which restores it afterwards; the session header names the device used.
"""

from __future__ import annotations

import pytest

from tests.device import DEVICE, EMULATED

__all__ = ["DEVICE", "EMULATED", "emulated_only"]


def pytest_report_header(config) -> str:
    what = "the emulated device (numpy under CuPy's rules)" if EMULATED else "CuPy on a GPU"
    return f"actorflow GPU tests run on: {what} (ACTORFLOW_DEVICE={DEVICE})"


@pytest.fixture(autouse=True)
def _on_the_device(cuda_device):
    """Every GPU test runs with ``ACTORFLOW_DEVICE`` set (and restored after it)."""
    return cuda_device


@pytest.fixture
def xp(cuda_device):
    from actorflow.streams.device import device_backend

    return device_backend().xp


emulated_only = pytest.mark.skipif(
    not EMULATED, reason="checks the emulated device itself (a real GPU is running these tests)")
