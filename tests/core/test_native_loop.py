"""The native unit loop: what runs without Python, the GIL left alone, and fork safety.

Thread units whose core is compiled run their whole loop in C (``_core/loop.pxi``); kinds
with no Python kernel (identity, comm_net and repeat copies, ticks, the main job's kinds)
run there without the GIL.  The contract suite (tests/actors/test_contract.py) runs every
plan shape on both cores; these tests show the native loop's own promises.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np
import pytest

import actorflow as af
from actorflow.actors.cores import available_cores, make_unit_core
from actorflow.actors.runtime import MachineRuntime
from actorflow.errors import ProtocolError
from actorflow.protocol.messages import READY, Msg
from tests.protocol.by_hand import make_task

pytestmark = pytest.mark.skipif("native" not in available_cores(),
                                reason="the compiled core is not built")


def chain(register_num: int = 2, pieces: int = 20) -> af.Plan:
    b = af.PlanBuilder(register_num=register_num)
    x = b.input("x", (13,), "float64", thrd=0)
    h = b.op("identity", x, thrd=1, name="copy1")
    h = b.op("identity", h, thrd=2, name="copy2")
    h = b.op("scalar_mul", h, scalar=2.0, thrd=2, name="double")
    b.output("y", h, thrd=0)
    return b.build()


def test_each_act_runs_as_no_op_memcpy_or_python(monkeypatch):
    monkeypatch.delenv("ACTORFLOW_CORE", raising=False)
    plan = chain()
    with af.Session(plan) as s:
        units = s.runtime.units
        assert all(u.native for u in units.values())
        modes = {t.label: units[(0, t.thrd_id)].core.plan_mode(t.task_id) for t in plan.tasks}
        outs = list(s.run_many({"x": np.arange(13.0) + k} for k in range(20)))
    assert modes == {"x": "python", "copy1": "copy", "copy2": "copy", "double": "python",
                     "y": "python"}
    for k, y in enumerate(outs):
        np.testing.assert_array_equal(y, 2 * (np.arange(13.0) + k))


def test_python_core_runs_the_python_loop(monkeypatch):
    monkeypatch.setenv("ACTORFLOW_CORE", "python")
    with af.Session(chain()) as s:
        assert not any(u.native for u in s.runtime.units.values())
        assert type(next(iter(s.runtime.units.values())).core).__name__ == "PyUnitCore"
        np.testing.assert_array_equal(s.run({"x": np.ones(13)}), np.full(13, 2.0))


def test_copies_move_pieces_while_another_thread_holds_the_gil(monkeypatch):
    """Units with only copy kernels take messages, act and pass pieces on while this thread
    keeps the GIL (a switch interval longer than the wait): their loops never ask for it."""
    monkeypatch.delenv("ACTORFLOW_CORE", raising=False)
    pieces = 40
    b = af.PlanBuilder(register_num=pieces)
    x = b.input("x", (8,), "float64", thrd=0)
    h = b.op("identity", x, thrd=1, name="copy1")
    h = b.op("identity", h, thrd=2, name="copy2")
    b.output("y", h, thrd=0)
    plan = b.build()
    rt = MachineRuntime(plan)
    src = plan.input_tasks()["x"]
    copy1 = next(t for t in plan.tasks if t.label == "copy1")
    desc = next(iter(src.produced.values())).regst_desc_id
    u1, u2 = rt.route[copy1.task_id], rt.units[(0, 2)]
    for u in rt.units.values():
        u.plan()
    u1.start()
    u2.start()  # unit 0 (input, output) stays unstarted: what reaches it waits in its inbox
    old = sys.getswitchinterval()
    done = -1
    try:
        sys.setswitchinterval(60.0)
        for i in range(pieces):  # READYs as if the input task had written slot i
            u1.core.put(Msg(READY, src.task_id, copy1.task_id, desc, i, i, i))
        deadline = time.monotonic() + 30.0
        while time.monotonic() < deadline:  # pure Python: the GIL stays here
            done = u2.core.acts_started
            if done == pieces:
                break
    finally:
        sys.setswitchinterval(old)
        rt.fail(ProtocolError("test over"))
        rt.join()
    assert done == pieces, f"copy2 acted {done} times of {pieces} while the GIL was held"


def test_a_core_refuses_to_work_in_a_forked_child():
    task = make_task(2, "normal", produced=[(20, 1, [3])], consumed=[10])
    core = make_unit_core([task], {10: 1}, "unit f", impl="native")
    pid = os.fork()
    if pid == 0:  # the child: a copy of the core's memory, owned by the parent
        code = 3
        try:
            core.push([])
        except ProtocolError as e:
            code = 0 if f"belongs to process {os.getppid()}" in str(e) else 2
        except BaseException:
            code = 4
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert core.push([]) == []  # the parent still owns it
