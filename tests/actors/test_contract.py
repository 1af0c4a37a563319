"""The runtime contract, written once and run for every (execution unit x transport x machines).

Each combination runs the same plans through the Session API and must give the
numpy-expected numbers:
  session        plain Session: thread units, in-process queues (2 simulated machines)
  inproc-2       2 MachineNodes, thread units, inproc:// sockets between machines
  ipc-2          2 MachineNodes, thread units, ipc:// sockets between machines
  process-ipc    1 machine, one process per unit, regsts in shared memory, ipc:// slots
  tcp-2 / tcp-3  2 or 3 MachineNodes over tcp:// loopback, thread units
  process-tcp-2  2 machines with process units: shm inside a machine, tcp between them
Every combination runs with the inline CPU stream and with the deferred one (kernels finish
on a worker thread and READY/ACK wait for completion, the path a GPU stream takes), and on
both actor cores: the compiled one (where it is built; thread units on the inline stream run
the whole native loop) and the Python reference (``ACTORFLOW_CORE=python``).
Machines as separate OS processes are covered in tests/transport/test_machine_processes.py.
(Process units cannot use inproc://: it only connects sockets of one process.)
"""

from __future__ import annotations

import numpy as np
import pytest

import actorflow as af
from actorflow.actors.cores import available_cores
from actorflow.errors import KernelError
from actorflow.session import ClusterSession

COMBOS = {
    "session": (2, lambda plan: af.Session(plan, timeout=30)),
    "inproc-2": (2, lambda plan: ClusterSession(plan, scheme="inproc", timeout=30)),
    "ipc-2": (2, lambda plan: ClusterSession(plan, scheme="ipc", timeout=30)),
    "process-ipc": (1, lambda plan: ClusterSession(plan, unit="process", scheme="ipc",
                                                   timeout=30)),
    "tcp-2": (2, lambda plan: ClusterSession(plan, scheme="tcp", timeout=30)),
    "tcp-3": (3, lambda plan: ClusterSession(plan, scheme="tcp", timeout=30)),
    "process-tcp-2": (2, lambda plan: ClusterSession(plan, unit="process", scheme="tcp",
                                                     timeout=30)),
}


STREAMS = ("inline", "deferred")
CORES = available_cores()  # python, and native where the extension is built


class Combo:
    def __init__(self, name: str, stream: str, core: str) -> None:
        self.name = name
        self.stream = stream
        self.core = core
        self.machines, self.open = COMBOS[name]

    def m(self, i: int) -> int:
        """The i-th machine of a round-robin placement."""
        return i % self.machines


@pytest.fixture(params=[(c, s, k) for c in sorted(COMBOS) for s in STREAMS for k in CORES],
                ids=lambda p: f"{p[0]}-{p[1]}-{p[2]}")
def combo(request, monkeypatch) -> Combo:
    name, stream, core = request.param
    monkeypatch.setenv("ACTORFLOW_CPU_STREAM", stream)  # unit processes inherit it
    monkeypatch.setenv("ACTORFLOW_CORE", core)
    return Combo(name, stream, core)


def piece_value(shape, i):
    return np.full(shape, 1.0 + i)


@pytest.mark.parametrize("register_num", [1, 3])
def test_chain(combo, register_num):
    shape = (64, 33)  # not a multiple of the shm alignment
    b = af.PlanBuilder(machines=combo.machines, register_num=register_num)
    x = b.source("constant", {"shape": list(shape), "dtype": "float64", "value": 1.0,
                              "piece_scale": 1.0}, piece_num=9)
    h = b.op("relu", x, machine=combo.m(0))
    h = b.op("scalar_mul", h, scalar=2.0, machine=combo.m(1))
    h = b.op("scalar_add", h, scalar=3.0, machine=combo.m(2))
    h = b.op("neg", h, machine=combo.m(3))
    b.output("y", h)
    with combo.open(b.build()) as s:
        out = s.run_to_end()["y"]
    assert len(out) == 9
    for i, y in enumerate(out):
        np.testing.assert_array_equal(y, -(2 * piece_value(shape, i) + 3))


def test_fan_out_fan_in(combo):
    b = af.PlanBuilder(machines=combo.machines, register_num=2)
    x = b.source("arange", {"stop": 6, "dtype": "int64", "piece_scale": 10}, piece_num=7)
    a = b.op("relu", x, machine=combo.m(1))
    c = b.op("scalar_mul", x, scalar=3, machine=combo.m(2))
    d = b.op("add", a, c, machine=combo.m(0))
    e = b.op("sub", d, x, machine=combo.m(1))
    b.output("d", d)
    b.output("e", e, machine=combo.m(2))
    with combo.open(b.build()) as s:
        out = s.run_to_end()
    assert len(out["d"]) == len(out["e"]) == 7
    for i in range(7):
        x_i = np.arange(6) + 10 * i
        np.testing.assert_array_equal(out["d"][i], 4 * x_i)
        np.testing.assert_array_equal(out["e"][i], 3 * x_i)


def test_acc_then_repeat(combo):
    b = af.PlanBuilder(machines=combo.machines, register_num=2)
    x = b.source("constant", {"shape": [3], "dtype": "float32", "value": 1.0,
                              "piece_scale": 1.0}, piece_num=7)
    g = b.acc(x, 3, machine=combo.m(1))
    r = b.repeat(g, 2, machine=combo.m(2))
    b.output("r", r, machine=combo.m(0))
    with combo.open(b.build()) as s:
        out = s.run_to_end()["r"]
    groups = [sum(1.0 + i for i in range(k, min(k + 3, 7))) for k in (0, 3, 6)]
    assert [float(o[0]) for o in out] == [g for g in groups for _ in range(2)]


def test_fed_inputs_run_many(combo):
    b = af.PlanBuilder(machines=combo.machines, register_num=2)
    x = b.input("x", (5,), "float32", machine=combo.m(0))
    y = b.op("scalar_mul", x, scalar=0.5, machine=combo.m(1))
    z = b.op("add", y, x, machine=combo.m(2))
    b.output("z", z, machine=combo.m(1))
    feeds = [{"x": np.arange(5, dtype=np.float32) * k} for k in range(12)]
    with combo.open(b.build()) as s:
        outs = list(s.run_many(feeds, window=4))
        single = s.run({"x": np.ones(5, np.float32)})
    for k, o in enumerate(outs):
        np.testing.assert_allclose(o, 1.5 * np.arange(5) * k)
    np.testing.assert_allclose(single, np.full(5, 1.5))


def test_kernel_error_names_op_task_and_machine(combo):
    bad = combo.m(2)
    b = af.PlanBuilder(machines=combo.machines, register_num=2)
    x = b.source("constant", {"shape": [4], "dtype": "float32", "value": 1.0}, piece_num=20)
    h = b.op("relu", x, machine=combo.m(1))
    h = b.op("fail", h, piece=3, message="boom on piece 3", machine=bad, name="exploder")
    b.output("y", h, machine=combo.m(0))
    plan = b.build()
    task = next(t for t in plan.tasks if t.name == "exploder")
    with pytest.raises(KernelError) as ei:
        with combo.open(plan) as s:
            s.run_to_end()
    err = ei.value
    assert (err.op_name, err.task_id, err.machine_id, err.piece_id) == ("exploder",
                                                                        task.task_id, bad, 3)
    assert "boom on piece 3" in str(err) and "RuntimeError" in err.traceback_text
