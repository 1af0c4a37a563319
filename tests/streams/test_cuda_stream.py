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


def test_stream_types_are_registered_and_an_unknown_one_lists_them():
    from actorflow.errors import RegistryError
    from actorflow.streams.stream import STREAMS

    assert {"cpu", "cpu-deferred", "cuda"} <= set(STREAMS.names())
    with pytest.raises(RegistryError, match=r"unknown stream 'tpu'; known: cpu, "
                                            r"cpu-deferred, cuda"):
        make_stream("tpu:0")


def test_cpu_stream_choice_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("ACTORFLOW_CPU_STREAM", "deferred")
    s = make_stream("host")
    try:
        assert type(s).__name__ == "DeferredCpuStream" and not s.synchronous
    finally:
        s.close()
    monkeypatch.setenv("ACTORFLOW_CPU_STREAM", "lazy")
    with pytest.raises(DeviceError, match=r"ACTORFLOW_CPU_STREAM='lazy'; expected one of "
                                          r"\['deferred', 'inline'\]"):
        make_stream("host")
