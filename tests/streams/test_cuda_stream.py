"""The CUDA device backend needs CuPy; without it the error names the extra to install."""

from __future__ import annotations

import importlib.util

import pytest

from actorflow.errors import DeviceError
from actorflow.streams.stream import make_stream

HAVE_CUPY = importlib.util.find_spec("cupy") is not None


@pytest.mark.skipif(HAVE_CUPY, reason="CuPy is installed: the missing-CuPy error cannot occur")
def test_cuda_stream_without_cupy_names_the_fix(monkeypatch):
    monkeypatch.delenv("ACTORFLOW_DEVICE", raising=False)
    with pytest.raises(DeviceError, match=r"needs CuPy.*actorflow\[cuda1[23]\]") as ei:
        make_stream("cuda:0")
    assert "ACTORFLOW_DEVICE=emulated" in str(ei.value)


def test_unknown_device_backend_lists_the_known_ones(monkeypatch):
    monkeypatch.setenv("ACTORFLOW_DEVICE", "tpu")
    with pytest.raises(DeviceError, match=r"ACTORFLOW_DEVICE='tpu'.*known: cuda, emulated"):
        make_stream("cuda:0")
