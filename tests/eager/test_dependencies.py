"""The scheduler orders instructions by their reads and writes of blob objects, across
streams: a write, then reads, then a write, then a read of one blob, with the writes on
one stream and the reads on another, each step slow enough that a missing dependency
would let the next one start early."""

from __future__ import annotations

import time

import numpy as np
import pytest

from actorflow.eager import (
    INSTRUCTION_TYPES,
    register_instruction_type,
)
from actorflow.eager.builder import InstructionsBuilder
from actorflow.eager.device import CPU
from actorflow.errors import RegistryError
from tests.eager.steps import Step


def test_write_reads_write_read_across_two_streams(vm):
    blob = vm.core.Blob((1,), "float64", CPU, np.zeros(1))
    log: dict[str, tuple[float, float, str]] = {}
    seen: dict[str, float] = {}

    def step(name: str, secs: float, value: float | None = None):
        def run(host):
            t0 = time.monotonic()
            if value is None:
                seen[name] = float(blob.array[0])
            time.sleep(secs)
            if value is not None:
                blob.array[0] = value
            log[name] = (t0, time.monotonic(), host.label)
        return run

    b = InstructionsBuilder(vm)
    b.call("test.side.step", CPU, "w1", step("w1", 0.15, 1.0), [], [blob])
    b.call("test.main.step", CPU, "r1", step("r1", 0.15), [blob], [])
    b.call("test.main.step", CPU, "r2", step("r2", 0.0), [blob], [])
    b.call("test.side.step", CPU, "w2", step("w2", 0.0, 2.0), [], [blob])
    b.call("test.main.step", CPU, "r3", step("r3", 0.0), [blob], [])
    t = time.monotonic()
    b.submit()
    assert time.monotonic() - t < 0.1  # issuing returned before the slow steps ran
    vm.sync(timeout=10)
    assert log["w1"][1] <= log["r1"][0] and log["w1"][1] <= log["r2"][0]  # read after write
    assert log["r1"][1] <= log["w2"][0] and log["r2"][1] <= log["w2"][0]  # write after read
    assert log["w2"][1] <= log["r3"][0]  # read after the second write
    assert seen == {"r1": 1.0, "r2": 1.0, "r3": 2.0}
    assert {log[n][2] for n in ("w1", "w2")} == {"test.side:0"}
    assert {log[n][2] for n in ("r1", "r2", "r3")} == {"cpu.compute:0"}


def test_write_after_write_across_streams_keeps_the_last_value(vm):
    blob = vm.core.Blob((1,), "float64", CPU, np.zeros(1))

    def put(value, secs):
        def run(host):
            time.sleep(secs)
            blob.array[0] = value
        return run

    b = InstructionsBuilder(vm)
    b.call("test.side.step", CPU, "slow", put(1.0, 0.2), [], [blob])
    b.call("test.main.step", CPU, "fast", put(2.0, 0.0), [], [blob])
    b.submit()
    vm.sync(timeout=10)
    assert blob.array[0] == 2.0


def test_independent_streams_overlap(vm):
    """No shared blob, no order: the two streams run at the same time."""
    a, c = vm.core.Blob((1,), "float64", CPU), vm.core.Blob((1,), "float64", CPU)
    spans = {}

    def nap(name):
        def run(host):
            t0 = time.monotonic()
            time.sleep(0.2)
            spans[name] = (t0, time.monotonic())
        return run

    b = InstructionsBuilder(vm)
    b.call("test.side.step", CPU, "x", nap("x"), [], [a])
    b.call("test.main.step", CPU, "y", nap("y"), [], [c])
    b.submit()
    vm.sync(timeout=10)
    assert spans["x"][0] < spans["y"][1] and spans["y"][0] < spans["x"][1]


def test_unknown_names_list_the_known_ones(vm):
    with pytest.raises(RegistryError, match=r"unknown instruction type 'cpu\.nope'; known: .*"
                                            r"cpu\.compute.*cuda\.h2d"):
        INSTRUCTION_TYPES.get("cpu.nope")
    with pytest.raises(RegistryError, match=r"instruction type 'cpu\.compute' is registered twice"):
        register_instruction_type("cpu.compute", Step("cpu.compute"))
    with pytest.raises(RegistryError, match=r"unknown stream type 'gpu\.x'"):
        register_instruction_type("x.y", Step("gpu.x"))
