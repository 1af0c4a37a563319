"""The one-machine runtime with real threads: pipelining, kernel errors, timeouts, recorder.

Pipelining is shown by a rendezvous, not by a clock: with register_num >= 2, stage k+1
working on piece i waits (inside its kernel) until stage k has started piece i+1, which
only a pipelined run allows.  Lock-step (register_num 1) is read from the order of act
begins and ends the recorder hook saw.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import actorflow as af
from actorflow.errors import KernelError, WaitTimeout
from actorflow.kernels import KernelContext
from actorflow.kernels.ops._infer import same
from actorflow.kernels.registry import OpDef, register_op
from actorflow.protocol.messages import ACK, EORD, READY
from tests.actors.recorder import Recorder

STAGES = 3
PIECES = 6


_started: dict[tuple[int, int], threading.Event] = {}  # (stage, piece) -> began
_met: dict[tuple[int, int], bool] = {}  # (stage, piece) -> saw the stage before on piece+1
_lock = threading.Lock()


def _started_event(stage: int, piece: int) -> threading.Event:
    with _lock:
        return _started.setdefault((stage, piece), threading.Event())


def _meet_kernel(ctx: KernelContext, ins: dict, outs: dict, attrs: dict) -> None:
    stage, piece = int(attrs["stage"]), ctx.piece_id
    _started_event(stage, piece).set()
    if stage > 0 and piece + 1 < int(attrs["pieces"]):
        _met[(stage, piece)] = _started_event(stage - 1, piece + 1).wait(30)
    outs["out"][...] = ins["in"]


register_op(OpDef("test_meet_previous_stage", ("in",), lambda ins, a: same(ins["in"]),
                  _meet_kernel, doc="tests only: waits until the stage before starts the "
                  "next piece"))


def chain(register_num: int, op: str = "identity", **attrs) -> tuple[af.Plan, list[int]]:
    """x -> op -> op -> op -> y, one thread per stage."""
    b = af.PlanBuilder(register_num=register_num)
    h = b.input("x", (2,), "float64")
    ids = []
    for k in range(STAGES):
        h = b.op(op, h, name=f"stage{k}", **({"stage": k, **attrs} if attrs else {}))
        ids.append(h.task_id)
    b.output("y", h)
    return b.build(), ids


def run_recorded(plan: af.Plan) -> tuple[Recorder, list[np.ndarray]]:
    rec = Recorder()
    feeds = [{"x": np.full(2, i, np.float64)} for i in range(PIECES)]
    with af.Session(plan, recorder=rec, timeout=60) as s:
        ys = list(s.run_many(feeds, window=PIECES))
    return rec, ys


@pytest.mark.parametrize("register_num", [2, 3])
def test_stages_overlap_with_register_num_2_or_more(register_num):
    _started.clear()
    _met.clear()
    plan, _ids = chain(register_num, "test_meet_previous_stage", pieces=PIECES)
    _rec, ys = run_recorded(plan)
    assert [float(y[0]) for y in ys] == list(range(PIECES))
    # every stage after the first, on every piece but the last, met the stage before it
    # already working on the next piece: each boundary pipelines on every piece
    want = {(k, i) for k in range(1, STAGES) for i in range(PIECES - 1)}
    assert _met == dict.fromkeys(want, True)


def test_stages_never_overlap_with_register_num_1():
    plan, ids = chain(1)
    rec, ys = run_recorded(plan)
    assert [float(y[0]) for y in ys] == list(range(PIECES))
    # the protocol: stage k starts piece i+1 only after stage k+1 ended piece i
    for k in range(STAGES - 1):
        up, down = rec.intervals(ids[k]), rec.intervals(ids[k + 1])
        for i in range(PIECES - 1):
            assert up[i + 1][0] > down[i][1], (k, i)


def test_recorder_sees_every_message_once_and_eord_last_per_desc():
    plan, ids = chain(2)
    rec, _ = run_recorded(plan)
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
