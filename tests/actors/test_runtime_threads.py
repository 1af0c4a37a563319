"""The one-machine runtime with real threads: pipelining, kernel errors, timeouts, recorder.

The pipelining proof reads act intervals from the runtime's recorder hook (perf_counter_ns
at act begin/end); it asserts on interval overlap, never on wall-clock totals.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import actorflow as af
from actorflow.errors import KernelError, WaitTimeout
from actorflow.protocol.messages import ACK, EORD, READY
from tests.actors.recorder import Recorder

STAGES = 3
PIECES = 6


def sleep_chain(register_num: int, ms: float = 15.0) -> tuple[af.Plan, list[int]]:
    """x -> sleep -> sleep -> sleep -> y, one thread per stage."""
    b = af.PlanBuilder(register_num=register_num)
    h = b.input("x", (2,), "float64")
    ids = []
    for k in range(STAGES):
        h = b.op("sleep", h, ms=ms, name=f"stage{k}")
        ids.append(h.task_id)
    b.output("y", h)
    return b.build(), ids


def overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def run_recorded(register_num: int) -> tuple[Recorder, list[int], list[np.ndarray]]:
    plan, ids = sleep_chain(register_num)
    rec = Recorder()
    feeds = [{"x": np.full(2, i, np.float64)} for i in range(PIECES)]
    with af.Session(plan, recorder=rec, timeout=30) as s:
        ys = list(s.run_many(feeds, window=PIECES))
    return rec, ids, ys


def pipelined_pairs(rec: Recorder, ids: list[int]) -> list[tuple[int, int]]:
    """(stage k, piece i) where stage k+1 on piece i overlapped stage k on piece i+1."""
    pairs = []
    for k in range(STAGES - 1):
        up, down = rec.intervals(ids[k]), rec.intervals(ids[k + 1])
        for i in range(PIECES - 1):
            if overlaps(down[i], up[i + 1]):
                pairs.append((k, i))
    return pairs


@pytest.mark.parametrize("register_num", [2, 3])
def test_stages_overlap_with_register_num_2_or_more(register_num):
    rec, ids, ys = run_recorded(register_num)
    assert [float(y[0]) for y in ys] == list(range(PIECES))
    pairs = pipelined_pairs(rec, ids)
    # every stage boundary shows pipelining, and on most pieces
    assert {k for k, _ in pairs} == set(range(STAGES - 1)), pairs
    assert len(pairs) >= (STAGES - 1) * (PIECES - 1) // 2, pairs


def test_stages_never_overlap_with_register_num_1():
    rec, ids, ys = run_recorded(1)
    assert [float(y[0]) for y in ys] == list(range(PIECES))
    assert pipelined_pairs(rec, ids) == []
    # and the reason is the protocol: stage k starts piece i+1 only after stage k+1 ended i
    for k in range(STAGES - 1):
        up, down = rec.intervals(ids[k]), rec.intervals(ids[k + 1])
        for i in range(PIECES - 1):
            assert up[i + 1][0] >= down[i][1]


def test_recorder_sees_every_message_once_and_eord_last_per_desc():
    rec, ids, _ = run_recorded(2)
    sent = {m.msg_id for m in rec.sent}
    got = [m.msg_id for m in rec.received if m.src >= 0]  # not client commands
    assert len(sent) == len(rec.sent)  # unique ids
    assert sorted(got) == sorted(sent)  # every message delivered exactly once
    for tid in ids:
        out = [m for m in rec.sent if m.src == tid]
        assert [m.type for m in out].count(READY) == PIECES
        assert [m.type for m in out].count(ACK) == PIECES
        eords = [i for i, m in enumerate(out) if m.type == EORD]
        readies = [i for i, m in enumerate(out) if m.type == READY]
        assert len(eords) == 1 and eords[0] > readies[-1]  # EORD after the last READY


def test_kernel_error_names_op_task_machine_and_traceback_and_stops_threads():
    b = af.PlanBuilder()
    x = b.input("x", (2,), "float32")
    y = b.op("relu", x)
    f = b.op("fail", y, piece=2, message="injected boom", name="the_failing_op")
    b.output("y", b.op("relu", f))
    plan = b.build()
    with pytest.raises(KernelError) as e, af.Session(plan, timeout=10) as s:
        out = list(s.run_many(({"x": np.ones(2, np.float32)} for _ in range(5)), window=1))
        pytest.fail(f"no error, got {out}")
    err = e.value
    assert err.op_name == "the_failing_op" and err.task_id == f.task_id
    assert err.machine_id == 0 and err.piece_id == 2
    msg = str(err)
    assert f"kernel of op 'the_failing_op' (task {f.task_id}, machine 0) failed on piece 2: " \
           "RuntimeError: injected boom" in msg
    assert "--- original traceback ---" in msg and "_fail_kernel" in msg
    assert isinstance(err.__cause__, RuntimeError)
    assert KernelError.from_dict(err.to_dict()).to_dict() == err.to_dict()
    assert not [t for t in threading.enumerate() if t.name.startswith("actorflow")]


def test_kernel_error_from_a_single_run():
    b = af.PlanBuilder()
    b.output("y", b.op("fail", b.input("x", (1,)), name="bad"))
    s = af.Session(b.build(), timeout=10)
    with pytest.raises(KernelError, match=r"kernel of op 'bad' \(task 1, machine 0\)"):
        s.run({"x": np.zeros(1, np.float32)})
    with pytest.raises(KernelError):  # close re-raises the run's error, after joining
        s.close()


def test_output_that_never_comes_times_out_naming_what_it_waited_for():
    b = af.PlanBuilder()
    b.output("y", b.op("sleep", b.input("x", (1,)), ms=700, name="slow"))
    with pytest.raises(WaitTimeout) as e, af.Session(b.build(), timeout=0.3) as s:
        s.run({"x": np.zeros(1, np.float32)})
    msg = str(e.value)
    assert "waited 0.3s for piece 0 of output 'y'" in msg
    assert "still running: task" in msg


def test_wait_exited_names_the_live_actors():
    b = af.PlanBuilder()
    b.output("y", b.op("relu", b.input("x", (1,)), name="r"))
    s = af.Session(b.build(), timeout=5)
    try:
        with pytest.raises(WaitTimeout, match=r"every actor to exit; still running: task 0 "
                                               r"\(x, running\).*task 1 \(r, running\): waits "
                                               r"for READY on regst descs \[0\]"):
            s.runtime.wait_exited(0.05)
    finally:
        s.close()


def test_many_actors_on_one_thread_and_every_actor_exits():
    b = af.PlanBuilder(register_num=2)
    x = b.input("x", (3,), "float64", thrd=0)
    h = x
    for _ in range(10):
        h = b.op("scalar_add", h, scalar=1.0, thrd=0)
    b.output("y", h, thrd=0)
    plan = b.build()
    with af.Session(plan) as s:
        ys = list(s.run_many({"x": np.full(3, float(i))} for i in range(20)))
        rt = s.runtime
    assert len(rt.units) == 1
    assert [float(y[0]) for y in ys] == [i + 10.0 for i in range(20)]
    assert rt._exited == {t.task_id for t in plan.tasks}


@pytest.mark.parametrize("register_num", [1, 2])
def test_diamond_over_four_threads_stays_exact_for_many_pieces(register_num):
    """Fan-out and fan-in across threads, 2,000 pieces: no piece lost, reordered or mixed."""
    b = af.PlanBuilder(register_num=register_num)
    x = b.input("x", (2,), "float64", thrd=0)
    left = b.op("scalar_mul", x, scalar=3.0, thrd=1)
    right = b.op("scalar_add", b.op("neg", x, thrd=2), scalar=1.0, thrd=3)
    b.output("y", b.op("add", left, right, thrd=0), thrd=1)
    n = 2000
    with af.Session(b.build(), timeout=60) as s:
        ys = list(s.run_many(({"x": np.full(2, float(i))} for i in range(n)), window=16))
    assert [float(y[1]) for y in ys] == [2.0 * i + 1.0 for i in range(n)]
