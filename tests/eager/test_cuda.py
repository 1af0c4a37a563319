"""CUDA tensors go through the same VM on the CUDA stream types (cuda.h2d, cuda.compute,
cuda.d2h).  There is no GPU here: these tests run on CuPy where a GPU is, else on the
emulated CUDA device (an array module with CuPy's rules backed by numpy), through the
``cuda_device`` fixture, which sets ``ACTORFLOW_DEVICE`` for each test and restores it.
Device results are compared with the CPU's within a GPU's rounding (it may reduce in
another order), not bit for bit."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import actorflow as af
import actorflow.functional as F
from actorflow.errors import ActorflowError, UsageError
from tests.eager.test_oracle import programs, run

needs_cuda = pytest.mark.usefixtures("cuda_device")


def test_without_a_cuda_device_the_error_says_what_to_install(monkeypatch):
    """ACTORFLOW_DEVICE unset means real GPUs through CuPy; with no CuPy importable (made
    so here, whatever this machine has) a cuda tensor names what to install."""
    from actorflow.streams import device

    monkeypatch.delenv("ACTORFLOW_DEVICE", raising=False)
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy -> ImportError
    device._backend.cache_clear()
    try:
        with pytest.raises(ActorflowError, match=r"needs CuPy, which is not installed: .*"
                                                 r"pip install 'actorflow\[cuda1[23]\]'.*"
                                                 r"ACTORFLOW_DEVICE=emulated"):
            af.tensor([1.0], device="cuda")
    finally:
        device._backend.cache_clear()


@needs_cuda
def test_to_device_and_back_through_copy_streams():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = af.tensor(a).to("cuda")
    assert str(x.device) == "cuda:0" and x.shape == (2, 3)
    y = F.relu(x - 2.0) @ af.tensor(a.T, device="cuda")
    np.testing.assert_array_equal(y.numpy(), np.maximum(a - 2, 0) @ a.T)
    back = y.to("cpu")
    assert str(back.device) == "cpu"
    np.testing.assert_array_equal(back.numpy(), y.numpy())
    labels = {s.label for s in af.eager.get_vm().stream_list}
    assert {"cuda.h2d:0", "cuda.compute:0", "cuda.d2h:0"} <= labels
    assert "device='cuda:0'" in repr(y)


@needs_cuda
def test_mixing_devices_in_one_op_is_a_clear_error():
    with pytest.raises(UsageError, match=r"different devices \(a on cpu, b on cuda:0\)"):
        F.add(af.tensor([1.0]), af.tensor([1.0], device="cuda"))


@needs_cuda
def test_release_and_counters_on_the_device():
    c0 = af.counters()
    x = af.ones(1024, device="cuda")
    y = (x * 2).to("cpu")
    assert y.numpy().sum() == 2048
    del x, y
    af.sync()
    c1 = af.counters()
    assert (c1["live_blobs"], c1["live_bytes"]) == (c0["live_blobs"], c0["live_bytes"])


@needs_cuda
@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(programs(), st.integers(0, 2**31 - 1))
def test_random_programs_on_the_device_agree_with_the_cpu(program, seed):
    """The oracle's programs, once on cuda:0 and once on cpu: the same kernels on either
    array module agree within float32 rounding (a GPU reduces in another order)."""
    shapes, steps = program
    rng = np.random.default_rng(seed)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    on_cpu = [t.numpy() for t in run(steps, [af.tensor(a) for a in inputs], api=True)]
    on_dev = run(steps, [af.tensor(a, device="cuda") for a in inputs], api=True)
    assert all(str(t.device) == "cuda:0" for t in on_dev)
    for c, d in zip(on_cpu, on_dev):
        np.testing.assert_allclose(d.numpy(), c, rtol=2e-5, atol=1e-6)
