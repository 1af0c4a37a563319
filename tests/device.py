"""Which CUDA device the tests that need one run on, decided once without changing the
environment: ``ACTORFLOW_DEVICE`` if the caller set it, else CuPy on a GPU when there is
one, else the emulated device.  The ``cuda_device`` fixture (``tests/conftest.py``) sets
``ACTORFLOW_DEVICE`` for one test and restores it afterwards."""

from __future__ import annotations

import os


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
EMULATED = DEVICE == "emulated"
