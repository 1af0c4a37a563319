"""``VirtualMachine.submit_one`` (the path of every single-kernel eager op) links read and
write dependencies one instruction at a time and keeps only those on *other* streams
(a same-stream predecessor is ordered by the FIFO; no list is made then).  These drive
it with instructions on two streams; the order is read from a log of starts and ends.
The first step holds until everything is issued, then leaves a window in which a
missing dependency would let the next read start early (it ends if that read starts)."""

from __future__ import annotations

import threading

import numpy as np

from actorflow.eager.builder import InstructionsBuilder
from actorflow.eager.device import CPU
from tests.eager.steps import WINDOW, Log  # (also registers test.main/side.step)


def test_submit_one_orders_across_streams_and_within_one(vm):
    blob = vm.core.Blob((1,), "float64", CPU, np.zeros(1))
    log, issued = Log(), threading.Event()
    seen: dict[str, float] = {}
    held: list[bool] = []
    log.started["r1"] = threading.Event()

    def step(name, value=None, hold=False):
        def run(host):
            log.mark("start", name)
            if hold:
                held.append(issued.wait(30))  # issuing returned before this step ran
                log.started["r1"].wait(WINDOW)  # r1 must not start meanwhile
            if value is None:
                seen[name] = float(blob.array[0])
            else:
                blob.array[0] = value
            log.mark("end", name)
        return run

    b = InstructionsBuilder(vm)
    b.call("test.side.step", CPU, "w1", step("w1", 1.0, hold=True), [], [blob])
    b.call("test.main.step", CPU, "r1", step("r1"), [blob], [])
    b.call("test.main.step", CPU, "w2", step("w2", 2.0), [], [blob])  # same stream WAR
    b.call("test.side.step", CPU, "r2", step("r2"), [blob], [])  # other stream RAW
    b.call("test.side.step", CPU, "w3", step("w3", 3.0), [], [blob])  # same stream WAR
    b.call("test.main.step", CPU, "r3", step("r3"), [blob], [])  # other stream RAW
    instrs = list(b.instructions)
    for i in instrs:
        vm.submit_one(i)
        if i is instrs[2]:  # w1 is held, so w2 cannot have finished
            deps_w2 = list(i.deps)
    issued.set()
    if vm.scheduler.name == "inline":  # (the thread scheduler links on its own thread)
        # w2 waits for w1 (WAW, other stream); r1 (WAR) is before it in its own FIFO
        assert deps_w2 == [instrs[0]]
    vm.sync(timeout=30)
    assert held == [True]
    for a, b_ in (("w1", "r1"), ("r1", "w2"), ("w2", "r2"), ("r2", "w3"), ("w3", "r3")):
        assert log.before(a, b_), (a, b_, log.events)
    assert seen == {"r1": 1.0, "r2": 2.0, "r3": 3.0}
