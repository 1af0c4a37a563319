"""The GPU tests: on a real GPU when CuPy and a device are there, else on the emulated device.

``python -m pytest tests/gpu -q`` is the command a person with a GPU runs; here (no GPU,
no CuPy) the same tests run on the emulated device, an array module with CuPy's rules
backed by numpy.  ``ACTORFLOW_DEVICE`` set by the caller wins (``emulated`` forces the
emulation on a GPU machine).  The session header names the device used.
"""

from __future__ import annotations

import os

import pytest


def _pick_device() -> str:
    chosen = os.environ.get("ACTORFLOW_DEVICE")
    if chosen:
        return chosen
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() > 0:
            return "cuda"
    except Exception:  # no CuPy, no driver, no device: the emulated device it is
        pass
    return "emulated"


DEVICE = _pick_device()
os.environ["ACTORFLOW_DEVICE"] = DEVICE  # worker and unit processes inherit it
EMULATED = DEVICE == "emulated"


def pytest_report_header(config) -> str:
    what = "the emulated device (numpy under CuPy's rules)" if EMULATED else "CuPy on a GPU"
    return f"actorflow GPU tests run on: {what} (ACTORFLOW_DEVICE={DEVICE})"


@pytest.fixture
def xp():
    from actorflow.streams.device import device_backend

    return device_backend().xp


emulated_only = pytest.mark.skipif(
    not EMULATED, reason="checks the emulated device itself (a real GPU is running these tests)")
