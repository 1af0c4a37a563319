"""Hangs that validation cannot see: the watchdog fires, dumps the flight recorder, and
why-stuck names the actor and the regst it waits for."""

from __future__ import annotations

import time

import numpy as np
import pytest

import actorflow as af
from actorflow.errors import KernelError, StallError
from actorflow.protocol.messages import ACK, EORD
from actorflow.trace.tracefile import load_dump
from actorflow.trace.whystuck import analyze
from tests.trace.plans import drop_one, fed_chain, flowlaunch, flowlaunch_json


def test_lost_ack_stalls_and_why_stuck_names_actor_and_regst(tmp_path):
    plan = fed_chain(register_num=1)  # validates fine: the hang needs a lost message
    src = plan.input_tasks()["x"]
    stage = next(t for t in plan.tasks if t.label == "stage")
    desc = next(iter(src.produced.values())).regst_desc_id
    with pytest.raises(StallError) as ei:
        with af.Session(plan, trace=tmp_path, stall_timeout=0.4, timeout=20) as s:
            dropped = drop_one(s, ACK, piece=1, dst=src.task_id)
            for i in range(4):
                s.feed({"x": np.full(4, i, np.float32)})
            for _ in range(4):
                s.fetch()
    assert dropped and dropped[0].dst == src.task_id
    err = ei.value
    msg = str(err)
    assert "no actor made progress" in msg and f"task {src.task_id} (x)" in msg
    assert f"regst desc {desc}" in msg or f"desc {desc}" in msg
    # the dump is on disk; why-stuck on it (CLI) names the same actor, regst and culprit
    dumps = list(tmp_path.glob("flight-stalled-*.afdump"))
    assert len(dumps) == 1 and err.dump_path == str(dumps[0])
    r = flowlaunch("trace", "why-stuck", dumps[0])
    assert r.returncode == 0, r.stderr
    assert f"task {src.task_id} (x) waits for a free regst of desc {desc} held by " \
           f"task {stage.task_id} (stage)" in r.stdout
    assert "ACK was lost" in r.stdout
    js = flowlaunch_json("trace", "why-stuck", tmp_path)
    assert js["cycle"] == sorted(js["cycle"]) or set(js["cycle"]) == {src.task_id,
                                                                        stage.task_id}
    # the flight recorder shows the last events before the hang
    d = load_dump(dumps[0])
    assert d["reason"] == "stalled" and d["units"] and d["states"]


def test_kernel_that_does_not_return_is_the_root(tmp_path):
    b = af.PlanBuilder(register_num=1)
    x = b.source("random_normal", {"shape": [4], "dtype": "float32", "seed": 1}, piece_num=6,
                 name="src")
    h = b.op("relu", x, name="before")
    h = b.op("sleep", h, ms=2500.0, only_piece=2, name="stuck")
    h = b.op("relu", h, name="after")
    b.output("y", h)
    plan = b.build()
    stuck = next(t for t in plan.tasks if t.label == "stuck")
    with pytest.raises(StallError) as ei:
        with af.Session(plan, stall_timeout=0.3, timeout=20) as s:
            s.run_to_end()
    msg = str(ei.value)
    assert f"root: task {stuck.task_id} (stuck) is inside its kernel on piece 2" in msg
    before = next(t for t in plan.tasks if t.label == "before")
    desc = next(iter(before.produced.values())).regst_desc_id
    assert (f"task {before.task_id} (before) waits for a free regst of desc {desc} held by "
            f"task {stuck.task_id} (stuck)") in msg
    report = ei.value.report
    assert report.roots[0] == stuck.task_id


def test_lost_eord_names_the_exited_producer(tmp_path):
    plan = fed_chain(register_num=2)
    src = plan.input_tasks()["x"]
    with pytest.raises(StallError) as ei:
        with af.Session(plan, stall_timeout=0.3, timeout=20) as s:
            drop_one(s, EORD, piece=-1)
            s.feed({"x": np.ones(4, np.float32)})
            s.fetch()
    msg = str(ei.value)
    assert f"waits for READY on regst desc 0 from task {src.task_id} (x), but task " \
           f"{src.task_id} (x) already exited" in msg


def test_idle_session_waiting_for_the_client_is_not_a_stall():
    plan = fed_chain()
    with af.Session(plan, stall_timeout=0.2, timeout=10) as s:
        out = s.run({"x": np.ones(4, np.float32)})
        deadline = time.monotonic() + 30  # nothing fed: the watchdog judges it idle, twice
        while s.diagnostics.idle_checks < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert s.diagnostics.idle_checks >= 2 and s.diagnostics.stall is None
        out2 = s.run({"x": -np.ones(4, np.float32)})
    assert out.tolist() == [1, 1, 1, 1] and out2.tolist() == [0, 0, 0, 0]


def test_kernel_failure_dumps_the_flight_recorder(tmp_path):
    b = af.PlanBuilder()
    x = b.input("x", (4,), "float32")
    b.output("y", b.op("fail", x, piece=1, name="boom"))
    plan = b.build()
    with pytest.raises(KernelError, match="boom"):
        with af.Session(plan, trace=tmp_path, timeout=10) as s:
            s.run({"x": np.ones(4, np.float32)})
            s.run({"x": np.ones(4, np.float32)})
    dumps = list(tmp_path.glob("flight-failed-*.afdump"))
    assert len(dumps) == 1
    d = load_dump(dumps[0])
    assert "boom" in d["error"]


def test_cycle_sentence_on_plain_states():
    tasks = {
        1: {"label": "a", "produced": {10: {"register_num": 1, "consumers": [2]}},
            "consumed": [20]},
        2: {"label": "b", "produced": {20: {"register_num": 1, "consumers": [1]}},
            "consumed": [10]},
    }
    base = {"status": "running", "inflight": 0, "queued": {1: 1}, "outputs_held": []}
    states = [
        {**base, "task_id": 1, "inputs_empty": [], "queued": {20: 1},
         "outputs_full": [{"regst_desc_id": 10, "held_by": [2]}]},
        {**base, "task_id": 2, "inputs_empty": [], "queued": {10: 1},
         "outputs_full": [{"regst_desc_id": 20, "held_by": [1]}]},
    ]
    rep = analyze(states, tasks)
    assert rep.cycle == [1, 2] and rep.sentence.startswith("deadlock: a cycle of 2 actors: ")
    assert "task 1 (a) waits for a free regst of desc 10 held by task 2 (b)" in rep.sentence
    assert "lost" not in rep.sentence


def test_unwritable_dump_dir_never_hides_the_run_error(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("ACTORFLOW_DUMP_DIR", str(blocker))
    b = af.PlanBuilder()
    x = b.input("x", (4,), "float32")
    b.output("y", b.op("fail", x, piece=0, name="boom"))
    with pytest.raises(Exception, match="boom"):
        with af.Session(b.build(), timeout=10) as s:
            s.run({"x": np.ones(4, np.float32)})
    assert "could not write the flight dump" in capsys.readouterr().err
