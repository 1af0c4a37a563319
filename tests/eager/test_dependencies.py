"""The scheduler orders instructions by their reads and writes of blob objects, across
streams: a write, then reads, then a write, then a read of one blob, with the writes on
one stream and the reads on another.  Order is read from a log of starts and ends (no
clock).  The first write holds until the test has issued everything (so issuing returns
before any of it ran), then keeps a window open in which a broken scheduler would start
the read that must follow it (the window ends at once if that read starts)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from actorflow.eager import (
    INSTRUCTION_TYPES,
    register_instruction_type,
)
from actorflow.eager.builder import InstructionsBuilder
from actorflow.eager.device import CPU
from actorflow.errors import RegistryError
from tests.eager.steps import WINDOW, Log, Step


def test_write_reads_write_read_across_two_streams(vm):
    blob = vm.core.Blob((1,), "float64", CPU, np.zeros(1))
    log, issued = Log(), threading.Event()
    seen: dict[str, float] = {}
    labels: dict[str, str] = {}
    held: list[bool] = []
    log.started["r1"] = threading.Event()

    def step(name: str, value: float | None = None, hold: bool = False):
        def run(host):
            log.mark("start", name)
            labels[name] = host.label
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
    b.call("test.main.step", CPU, "r2", step("r2"), [blob], [])
    b.call("test.side.step", CPU, "w2", step("w2", 2.0), [], [blob])
    b.call("test.main.step", CPU, "r3", step("r3"), [blob], [])
    b.submit()
    issued.set()
    vm.sync(timeout=30)
    assert held == [True]
    assert log.before("w1", "r1") and log.before("w1", "r2")  # read after write
    assert log.before("r1", "w2") and log.before("r2", "w2")  # write after read
    assert log.before("w2", "r3")  # read after the second write
    assert seen == {"r1": 1.0, "r2": 1.0, "r3": 2.0}
    assert {labels[n] for n in ("w1", "w2")} == {"test.side:0"}
    assert {labels[n] for n in ("r1", "r2", "r3")} == {"cpu.compute:0"}


def test_write_after_write_across_streams_keeps_the_last_value(vm):
    blob = vm.core.Blob((1,), "float64", CPU, np.zeros(1))
    issued, fast_started = threading.Event(), threading.Event()

    def first(host):
        assert issued.wait(30)
        fast_started.wait(WINDOW)  # the second write must not start meanwhile
        blob.array[0] = 1.0

    def second(host):
        fast_started.set()
        blob.array[0] = 2.0

    b = InstructionsBuilder(vm)
    b.call("test.side.step", CPU, "slow", first, [], [blob])
    b.call("test.main.step", CPU, "fast", second, [], [blob])
    b.submit()
    issued.set()
    vm.sync(timeout=30)
    assert blob.array[0] == 2.0


def test_independent_streams_overlap(vm):
    """No shared blob, no order: the two streams run at the same time (each step waits at
    a barrier for the other, which only works if both run at once)."""
    a, c = vm.core.Blob((1,), "float64", CPU), vm.core.Blob((1,), "float64", CPU)
    both = threading.Barrier(2)
    met: dict[str, int] = {}

    def meet(name):
        def run(host):
            met[name] = both.wait(30)
        return run

    b = InstructionsBuilder(vm)
    b.call("test.side.step", CPU, "x", meet("x"), [], [a])
    b.call("test.main.step", CPU, "y", meet("y"), [], [c])
    b.submit()
    vm.sync(timeout=60)
    assert sorted(met.values()) == [0, 1]


def test_unknown_names_list_the_known_ones(vm):
    with pytest.raises(RegistryError, match=r"unknown instruction type 'cpu\.nope'; known: .*"
                                            r"cpu\.compute.*cuda\.h2d"):
        INSTRUCTION_TYPES.get("cpu.nope")
    with pytest.raises(RegistryError, match=r"instruction type 'cpu\.compute' is registered twice"):
        register_instruction_type("cpu.compute", Step("cpu.compute"))
    with pytest.raises(RegistryError, match=r"unknown stream type 'gpu\.x'"):
        register_instruction_type("x.y", Step("gpu.x"))
