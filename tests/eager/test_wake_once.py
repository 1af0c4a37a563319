"""An issuing thread wakes a sleeping stream worker once and clears its flag, so the ops
issued before the worker runs skip the wake-up (``StreamRt.put``/``InlineScheduler``).
The worker re-arms the flag after every wait: these tests check that work issued with no
wait at all still runs on its own (asynchronous), in issue order, also right after a
helping waiter (``.numpy()``) drained the FIFO under the worker's nose.  The worker's idle
wait is made an hour long here, so a lost wake-up leaves the burst undone (the polling
below gives up after a minute) instead of merely slow."""

from __future__ import annotations

import time

import numpy as np

import actorflow as af
from actorflow.eager import worker


def _runs_on_its_own(deadline_s: float) -> None:
    """Every issued instruction gets done without anybody waiting through the VM."""
    deadline = time.monotonic() + deadline_s
    while True:
        c = af.counters()
        if c["instructions_done"] >= c["instructions_issued"]:
            return
        assert time.monotonic() < deadline, f"a lost wake-up: not run after {deadline_s}s: {c}"
        time.sleep(0.001)


def test_bursts_run_without_a_wait_after_helping_waits(monkeypatch):
    monkeypatch.setattr(worker, "IDLE_WAIT", 3600.0)
    y = af.tensor(np.zeros(4, np.float32))
    expected = 0.0
    for burst in range(20):
        for _ in range(burst % 5 + 1):  # a burst of 1..5 dependent ops, nobody waiting
            y = y + 1.0
            expected += 1.0
        _runs_on_its_own(60.0)
        z = y * 2.0  # then an op + .numpy(): the waiter may run the FIFO itself
        np.testing.assert_array_equal(z.numpy(), np.full(4, 2 * expected, np.float32))
    np.testing.assert_array_equal(y.numpy(), np.full(4, expected, np.float32))
