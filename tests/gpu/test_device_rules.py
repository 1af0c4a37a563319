"""The device's rules: no implicit host<->device conversion, explicit copies, stream order.

The refusals are CuPy's (they run against CuPy too when a GPU is there); the tests marked
``emulated_only`` check the emulation itself: stricter scalar conversion, copies from
pinned memory that really happen later on the stream's device thread, events, operands
and streams of another device refused (CUDA's rules), kernels computed on their stream's
thread so a consumer that does not wait for the producer's event reads unfinished memory.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from tests.gpu.conftest import emulated_only

HOST = np.arange(12, dtype=np.float32).reshape(3, 4)


def test_implicit_conversions_are_refused_like_cupy(xp):
    dev = xp.asarray(HOST)
    with pytest.raises(TypeError, match="Implicit conversion to a NumPy array is not allowed"):
        np.asarray(dev)
    with pytest.raises(ValueError, match=r"non-scalar numpy\.ndarray cannot be used for fill"):
        dev[...] = HOST  # executors.run_copy's old bug: numpy source into a device regst
    host = np.zeros_like(HOST)
    with pytest.raises(TypeError, match="Implicit conversion"):
        host[...] = dev  # the reverse copy
    with pytest.raises(TypeError):
        xp.add(dev, HOST)  # host arrays in device ops
    with pytest.raises(TypeError):
        np.add(HOST, dev)  # numpy ufuncs on device arrays
    np.testing.assert_array_equal(host, 0)


def test_explicit_copies_and_scalars_work(xp):
    dev = xp.asarray(HOST)
    dev[...] = 2.0  # scalars fill
    dev[0] = np.float32(5)
    out = np.empty_like(HOST)
    dev.get(out=out)
    want = np.full_like(HOST, 2.0)
    want[0] = 5
    np.testing.assert_array_equal(out, want)
    dev.set(HOST)
    np.testing.assert_array_equal(xp.asnumpy(dev * 2), HOST * 2)
    assert xp.sum(dev).item() == HOST.sum()
    assert isinstance(xp.sum(dev), xp.ndarray)  # reductions stay on the device (0-d)


@emulated_only
def test_emulated_scalar_conversion_is_stricter_than_cupy(xp):
    s = xp.sum(xp.asarray(HOST))
    for conv in (float, int, bool):
        with pytest.raises(TypeError, match=r"implicit device->host copy.*\.item\(\)"):
            conv(s)
    with pytest.raises(AttributeError, match=r"compute on the host"):
        xp.random.standard_normal(3)


@emulated_only
def test_pinned_copy_runs_later_on_the_stream_thread_and_the_event_says_when(xp,
                                                                                monkeypatch):
    monkeypatch.setenv("ACTORFLOW_EMULATED_LATENCY_US", "50000")  # a slow copy engine
    stream = xp.cuda.Stream(non_blocking=True)
    pinned = np.frombuffer(xp.cuda.alloc_pinned_memory(HOST.nbytes), np.float32,
                           HOST.size).reshape(HOST.shape)
    pinned[...] = HOST
    dev = xp.zeros(HOST.shape, np.float32)
    try:
        with stream:
            dev.set(pinned, stream=stream)
            ev = xp.cuda.Event()
            ev.record(stream)
        assert not ev.done  # queued: the device thread sleeps 50 ms before copying
        pinned[...] = -1  # what the copy reads is whatever the buffer holds when it runs
        ev.synchronize()
        assert ev.done
        np.testing.assert_array_equal(dev.get(), -np.ones_like(HOST))
        # device -> pinned host with blocking=False (CuPy >= 13): queued, done at the event
        out = np.frombuffer(xp.cuda.alloc_pinned_memory(HOST.nbytes), np.float32,
                            HOST.size).reshape(HOST.shape)
        out[...] = 7
        with stream:
            dev.get(stream=stream, out=out, blocking=False)
            ev2 = xp.cuda.Event()
            ev2.record(stream)
        assert not ev2.done and (out == 7).all()  # not copied yet
        ev2.synchronize()
        np.testing.assert_array_equal(out, -np.ones_like(HOST))
        out[...] = 7
        dev.get(stream=stream, out=out)  # blocking (the default): copied on return
        np.testing.assert_array_equal(out, -np.ones_like(HOST))
        # pageable (unpinned) memory: the copy is synchronous, as on CuPy
        with stream:
            dev.set(HOST.copy(), stream=stream)
        np.testing.assert_array_equal(dev.get(stream=stream), HOST)
    finally:
        stream.close()


@emulated_only
def test_device_count_and_an_index_past_it(xp, monkeypatch):
    monkeypatch.setenv("ACTORFLOW_EMULATED_DEVICES", "3")
    assert xp.cuda.runtime.getDeviceCount() == 3
    with pytest.raises(xp.cuda.CUDARuntimeError, match="invalid device ordinal 3"):
        xp.cuda.Device(3)


def test_gpu_bench_runs_tiny_and_prints_its_table(capsys):
    """Smoke only (no timing asserted): bench/gpu.py builds its three jobs, runs them and
    the hand loops, and prints the labelled table with the device it used."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "bench" / "gpu.py"
    spec = importlib.util.spec_from_file_location("bench_gpu", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--size", "32", "--pieces", "3", "--repeats", "1", "--chain", "3",
                     "--chain-pieces", "5"]) == 0
    out = capsys.readouterr().out
    assert "bench/gpu.py on " in out and ("EMULATED" in out or "CuPy" in out)
    assert "| job " in out and out.count("\n|") == 5  # header, rule, three rows


@emulated_only
def test_an_operand_on_another_device_is_refused(xp):
    """A kernel reads and writes the current device's memory only (CuPy without peer
    access); an explicit copy under the current device moves an array over."""
    with xp.cuda.Device(1):
        other = xp.asarray(HOST)
    with xp.cuda.Device(0):
        here = xp.asarray(HOST)
        refused = r"array resides \(1\) is different from the current device \(0\)"
        for kernel in (lambda: xp.add(here, other), lambda: here + other,
                       lambda: other * 2, lambda: xp.concatenate([here, other]),
                       lambda: xp.multiply(here, 2, out=other)):
            with pytest.raises(ValueError, match=refused):
                kernel()
        moved = xp.asarray(other)  # a copy between devices
        assert moved.device.id == 0 and other.device.id == 1
        np.testing.assert_array_equal(xp.asnumpy(here + moved), HOST * 2)


@emulated_only
def test_a_kernel_under_another_device_than_its_streams_is_refused(xp):
    with xp.cuda.Device(1):
        stream = xp.cuda.Stream(non_blocking=True)
        dev = xp.asarray(HOST)
    try:
        with xp.cuda.Device(0), stream:
            with pytest.raises(xp.cuda.CUDARuntimeError,
                               match=r"InvalidResourceHandle: .*stream of device 1 while "
                                     r"device 0 is current"):
                xp.zeros(3)
        with xp.cuda.Device(1), stream:  # the stream's own device: fine
            out = dev * 3
            stream.synchronize()
        np.testing.assert_array_equal(out.get(), HOST * 3)
    finally:
        stream.close()


@emulated_only
def test_kernels_run_on_their_streams_thread_and_a_consumer_must_wait_for_the_event(xp):
    """Stream 1 is held at a gate before it computes y = exp(x): a kernel on stream 2 that
    reads y without waiting for stream 1's event reads unfinished memory (poison); one
    that waits for the event reads y.  Launching onto the held stream does not block."""
    gate = threading.Event()
    s1, s2 = xp.cuda.Stream(non_blocking=True), xp.cuda.Stream(non_blocking=True)
    x = xp.asarray(HOST / 10)
    try:
        s1.launch_host_func(lambda _: gate.wait(30), None)  # stream 1 stalls here
        with s1:
            y = xp.exp(x)  # launched: returns at once, computed once the gate opens
            done = s1.record()
        assert not done.done
        with s2:
            early = y + 0  # no wait for stream 1: reads what y's memory holds now
            early_done = s2.record()
            s2.wait_event(done)
            late = y + 0  # after the event: reads y
            finished = s2.record()
        early_done.synchronize()  # stream 2 computed `early` while stream 1 was held
        assert not finished.done  # and now waits behind stream 1's event
        gate.set()
        finished.synchronize()
        with s2:
            got_early, got_late = early.get(stream=s2), late.get(stream=s2)
        assert np.isnan(got_early).all()
        np.testing.assert_allclose(got_late, np.exp(HOST / 10), rtol=1e-6)
    finally:
        gate.set()
        s1.close()
        s2.close()
