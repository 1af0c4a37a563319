"""The watchdog and why-stuck with process units: the node asks each unit process for its
actors' wait states over a status socket that a helper thread answers, even while the
unit's main thread is stuck inside a kernel."""

from __future__ import annotations

import numpy as np
import pytest

import actorflow as af
from actorflow.errors import StallError
from actorflow.session import ClusterSession
from actorflow.trace.tracefile import load_dump
from tests.trace.plans import chain, expected, flowlaunch


def _stuck_plan() -> af.Plan:
    b = af.PlanBuilder(register_num=1, name="stuckjob")
    x = b.source("random_normal", {"shape": [4], "dtype": "float32", "seed": 1}, piece_num=6,
                 name="src")
    h = b.op("relu", x, name="before")
    # far longer than the test: to the watchdog this kernel never returns
    h = b.op("sleep", h, ms=60000.0, only_piece=2, name="stuck")
    b.output("y", b.op("relu", h, name="after"))
    return b.build()


def test_process_unit_stuck_in_a_kernel_is_named_by_the_watchdog(tmp_path, monkeypatch):
    monkeypatch.setenv("ACTORFLOW_DUMP_DIR", str(tmp_path))
    plan = _stuck_plan()
    task = {t.label: t for t in plan.tasks}
    stuck, before = task["stuck"], task["before"]
    assert len({t.thrd_id for t in plan.tasks}) == len(plan.tasks)  # one process per actor
    desc = next(iter(before.produced.values())).regst_desc_id
    with pytest.raises(StallError) as ei:
        with ClusterSession(plan, unit="process", stall_timeout=0.5, timeout=20) as s:
            s.run_to_end()
    msg = str(ei.value)
    assert f"root: task {stuck.task_id} (stuck) is inside its kernel on piece 2" in msg
    assert (f"task {before.task_id} (before) waits for a free regst of desc {desc} held by "
            f"task {stuck.task_id} (stuck)") in msg
    assert ei.value.report.roots[0] == stuck.task_id
    # the dump holds every unit process's actor states; why-stuck on it says the same
    dump = ei.value.dump_path
    assert dump is not None
    d = load_dump(dump)
    states = {s["task_id"]: s for s in d["states"]}
    assert set(states) == {t.task_id for t in plan.tasks}
    assert states[stuck.task_id]["inflight_pieces"] == [2]
    assert {(s["machine_id"], s["thrd_id"]) for s in d["states"]} == {
        (t.machine_id, t.thrd_id) for t in plan.tasks}
    r = flowlaunch("trace", "why-stuck", dump)
    assert r.returncode == 0, r.stderr
    assert f"task {stuck.task_id} (stuck) is inside its kernel on piece 2" in r.stdout
    assert f"waits for a free regst of desc {desc} held by task {stuck.task_id}" in r.stdout


def test_process_units_that_progress_do_not_trip_the_watchdog():
    # each act takes 60 ms, the whole run several stall_timeouts: progress is seen through
    # the units' act counts, so the watchdog stays quiet and the outputs are right
    plan = chain(pieces=10, slow_ms=60.0)
    with ClusterSession(plan, unit="process", stall_timeout=0.3, timeout=30) as s:
        out = s.run_to_end()["y"]
        states = s.runtime.actor_states()
        assert s.diagnostics.stall is None
    assert [np.array_equal(o, expected(i)) for i, o in enumerate(out)] == [True] * 10
    # after the run every actor is listed as exited (finished units answer for nothing)
    assert sorted(s["task_id"] for s in states) == sorted(t.task_id for t in plan.tasks)
    assert {s["status"] for s in states} == {"exited"}
