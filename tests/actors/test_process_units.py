"""Process units at the node level: SIGKILL of a unit, shared memory lifetime, clean close."""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest

import actorflow as af
from actorflow.actors.node import MachineNode
from actorflow.errors import TransportError, UnitLost, WaitTimeout
from actorflow.transport.shm import list_run_segments
from tests.procs import pid_alive as _alive


def slow_plan(pieces: int = 400):
    b = af.PlanBuilder(machines=1, register_num=2)
    x = b.source("constant", {"shape": [1024], "dtype": "float32", "value": 1.0},
                 piece_num=pieces, name="src")
    h = b.op("sleep", x, ms=5.0, name="slow")
    h = b.op("relu", h, name="after")
    b.output("y", h)
    return b.build()




def test_sigkill_of_a_unit_is_reported_and_everything_is_cleaned():
    plan = slow_plan()
    got = []
    node = MachineNode(plan, 0, unit="process", on_deliver=lambda t, p, a: got.append(p))
    try:
        node.start()
        assert list_run_segments(node.run_id), "regsts should live in /dev/shm while running"
        src = next(t for t in plan.tasks if t.name == "src")
        slow = next(t for t in plan.tasks if t.name == "slow")
        node.command(src.task_id, "start", 400)
        deadline = time.monotonic() + 10
        while len(got) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(got) >= 3, "the run never got going"
        procs = dict(node.hosting.procs)
        victim = procs[(0, slow.thrd_id)]
        os.kill(victim.pid, signal.SIGKILL)
        with pytest.raises(UnitLost) as ei:  # the death, not the WaitTimeout of a minute
            node.wait_exited(timeout=60)
        msg = str(ei.value)
        assert f"m0-t{slow.thrd_id}" in msg and "machine 0" in msg and "SIGKILL" in msg
        assert str(victim.pid) in msg
    finally:
        node.close()
    assert not any(_alive(p.pid) for p in procs.values()), "a unit process survived close()"
    assert list_run_segments(node.run_id) == []


def test_segments_are_unlinked_after_a_normal_run_and_data_is_right():
    plan = slow_plan(pieces=6)
    got = {}
    node = MachineNode(plan, 0, unit="process",
                       on_deliver=lambda t, p, a: t is not None and got.update({p: a["out"]}))
    try:
        node.start()
        node.command(next(t for t in plan.tasks if t.name == "src").task_id, "start", 6)
        node.wait_exited(timeout=20)
    finally:
        node.close()
    assert sorted(got) == list(range(6))
    np.testing.assert_array_equal(got[5], np.ones(1024, np.float32))
    assert list_run_segments(node.run_id) == []


def test_close_before_start_unlinks_segments():
    node = MachineNode(slow_plan(), 0, unit="process")
    assert list_run_segments(node.run_id)
    node.close()
    assert list_run_segments(node.run_id) == []


def test_a_unit_that_cannot_build_fails_start_with_its_reason():
    node = MachineNode(slow_plan(), 0, unit="process", timeout=20)
    try:
        for name in list_run_segments(node.run_id):  # they vanish before the units attach
            os.unlink(os.path.join("/dev/shm", name))
        with pytest.raises(TransportError, match=r"machine 0 unit \d: cannot attach to "
                                                 r"shared-memory segment /dev/shm/actorflow"):
            node.start()  # the unit's own reason, not the start timeout
    finally:
        node.close()


def test_mixed_unit_kinds_and_feeds_routed_from_another_machine():
    """Machine 0 on process units, machine 1 on threads; machine 1 feeds machine 0's input."""
    b = af.PlanBuilder(machines=2, register_num=2)
    x = b.input("x", (4,), "float64", machine=0)
    h = b.op("scalar_mul", x, scalar=3.0, machine=0)
    h = b.op("add", h, x, machine=1)
    b.output("y", h, machine=1)
    plan = b.build()
    got = {}
    nodes = [MachineNode(plan.for_machine(0), 0, unit="process", run_id="mix" + str(os.getpid())),
             MachineNode(plan.for_machine(1), 1, unit="thread",
                         on_deliver=lambda t, p, a: t is not None and got.update({p: a["out"]}))]
    try:
        addrs = {m: n.bind("127.0.0.1") for m, n in enumerate(nodes)}
        for n in nodes:
            n.connect(addrs)
        for n in nodes:
            n.start()
        x_task = plan.input_tasks()["x"].task_id
        for k in range(5):
            nodes[1].push_feed(x_task, {"out": np.arange(4.0) + k})
        nodes[1].command(x_task, "close")
        for n in nodes:
            n.wait_exited(timeout=20)
    finally:
        for n in nodes:
            n.close()
    assert sorted(got) == list(range(5))
    for k in range(5):
        np.testing.assert_array_equal(got[k], 4 * (np.arange(4.0) + k))


def test_wait_timeout_says_why_each_unit_process_waits():
    b = af.PlanBuilder(machines=1, register_num=2)
    x = b.input("x", (3,), "float32")
    b.output("y", b.op("relu", x, name="relu"))
    plan = b.build()
    node = MachineNode(plan, 0, unit="process")
    try:
        node.start()  # nothing is fed: every actor waits
        with pytest.raises(WaitTimeout) as ei:
            node.wait_exited(timeout=0.5)
    finally:
        node.close()
    msg = str(ei.value)
    relu = next(t for t in plan.tasks if t.name == "relu")
    assert "waited 0.5s for every actor to exit" in msg
    assert f"task {relu.task_id} (relu, running): waits for READY on regst descs" in msg
    assert "unit process m0-t1" in msg
