"""``VirtualMachine.submit_one`` (the path of every single-kernel eager op) links read and
write dependencies one instruction at a time and keeps only those on *other* streams
(a same-stream predecessor is ordered by the FIFO; no list is made then).  These drive
it with instructions on two streams, each step slow enough that a missing dependency
would let the next one start early."""

from __future__ import annotations

import time

import numpy as np

import tests.eager.steps  # noqa: F401  (registers test.main.step / test.side.step)
from actorflow.eager.builder import InstructionsBuilder
from actorflow.eager.device import CPU


def test_submit_one_orders_across_streams_and_within_one(vm):
    blob = vm.core.Blob((1,), "float64", CPU, np.zeros(1))
    log: dict[str, tuple[float, float]] = {}
    seen: dict[str, float] = {}

    def step(name, secs, value=None):
        def run(host):
            t0 = time.monotonic()
            if value is None:
                seen[name] = float(blob.array[0])
            time.sleep(secs)
            if value is not None:
                blob.array[0] = value
            log[name] = (t0, time.monotonic())
        return run

    b = InstructionsBuilder(vm)
    b.call("test.side.step", CPU, "w1", step("w1", 0.15, 1.0), [], [blob])
    b.call("test.main.step", CPU, "r1", step("r1", 0.15), [blob], [])
    b.call("test.main.step", CPU, "w2", step("w2", 0.0, 2.0), [], [blob])  # same stream WAR
    b.call("test.side.step", CPU, "r2", step("r2", 0.1), [blob], [])  # other stream RAW
    b.call("test.side.step", CPU, "w3", step("w3", 0.0, 3.0), [], [blob])  # same stream WAR
    b.call("test.main.step", CPU, "r3", step("r3", 0.0), [blob], [])  # other stream RAW
    instrs = list(b.instructions)
    t = time.monotonic()
    for i in instrs:
        vm.submit_one(i)
        if i is instrs[2]:  # before w1 and r1 (0.3 s) have run, so before w2 can finish
            deps_w2 = list(i.deps)
    assert time.monotonic() - t < 0.1  # issuing returned before the slow steps ran
    if vm.scheduler.name == "inline":  # (the thread scheduler links on its own thread)
        # w2 waits for w1 (WAW, other stream); r1 (WAR) is before it in its own FIFO
        assert deps_w2 == [instrs[0]]
    vm.sync(timeout=10)
    assert log["w1"][1] <= log["r1"][0]
    assert log["r1"][1] <= log["w2"][0]
    assert log["w2"][1] <= log["r2"][0]
    assert log["r2"][1] <= log["w3"][0]
    assert log["w3"][1] <= log["r3"][0]
    assert seen == {"r1": 1.0, "r2": 2.0, "r3": 3.0}
