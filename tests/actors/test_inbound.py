"""The receiver's checks (actors/inbound.py), rule by rule, on a real two-machine plan."""

from __future__ import annotations

import numpy as np
import pytest

import actorflow as af
from actorflow.actors.inbound import Inbound
from actorflow.actors.node import MachineView
from actorflow.errors import MalformedMessage
from actorflow.protocol.messages import ACK, CLIENT, CMD, EORD, READY, Msg


def view_and_inbound(logged: list[str]):
    b = af.PlanBuilder(machines=2, register_num=2, name="two")
    x = b.input("x", (4,), "float32")
    b.output("y", b.op("relu", x, machine=1, name="relu"))
    plan = b.build()
    view = MachineView(plan.for_machine(1), 1)
    comm = plan.tasks_by_type("comm_net")[0]
    remote = comm.consumed_ids()[0]  # desc of machine 0's input, read by the comm_net
    buffers = {remote: [{"out": np.zeros(4, "float32")} for _ in range(2)]}
    inbound = Inbound("machine 1", view.routing, view.descs,
                      hosted=lambda t: view.routing.get(t, (None,))[0] == 1,
                      buffers=buffers.get, log=logged.append)
    return plan, comm, remote, inbound


def test_a_real_remote_ready_passes_and_lands_nowhere_else():
    logged: list[str] = []
    plan, comm, remote, inbound = view_and_inbound(logged)
    src = plan.regst_descs()[remote].producer_task_id
    body = Msg(READY, src, comm.task_id, remote, 1, 0, 0, 7).header()
    data = np.arange(4, dtype="float32")
    msg = inbound.check(body, [["out", "<f4", [4]]], [data.tobytes()], "10.0.0.1")
    assert (msg.type, msg.src, msg.dst, msg.slot) == (READY, src, comm.task_id, 1)
    assert inbound.check(Msg(CMD, CLIENT, comm.task_id, cmd="stop").header(), None, []) is not None
    assert not logged and inbound.dropped == {}


@pytest.mark.parametrize("mutate, problem", [
    (lambda b: b[:9], r"header is list of 9 fields, expected 10"),
    (lambda b: "x", r"header is str of 1 fields"),
    (lambda b: [9, *b[1:]], r"message type 9"),
    (lambda b: [True, *b[1:]], r"message type True"),
    (lambda b: [*b[:5], "0", *b[6:]], r"must be 64-bit integers"),
    (lambda b: [*b[:2], 999, *b[3:]], r"destination task 999 is not hosted here"),
    (lambda b: [b[0], 999, *b[2:]], r"sender task 999 is not in the plan"),
    (lambda b: [*b[:3], 77, *b[4:]], r"regst desc 77 is not in the plan"),
    (lambda b: [*b[:4], 2, *b[5:]], r"slot 2 outside \[0, 2\)"),
    (lambda b: [ACK, *b[1:]], r"does not link task"),
    (lambda b: [*b[:4], 2**64, *b[5:]], r"must be 64-bit integers"),
])
def test_malformed_headers_are_named(mutate, problem):
    logged: list[str] = []
    plan, comm, remote, inbound = view_and_inbound(logged)
    src = plan.regst_descs()[remote].producer_task_id
    body = mutate(Msg(READY, src, comm.task_id, remote, 0, 0, 0, 7).header())
    with pytest.raises(MalformedMessage, match=r"machine 1: malformed message from peer "
                                               r"10\.0\.0\.9 dropped \(.*" + problem):
        inbound.check(body, None, [], "10.0.0.9")
    assert inbound.dropped == {"10.0.0.9": 1} and len(logged) == 1


@pytest.mark.parametrize("metas, frames, problem", [
    ([["out", "<f4", [4]]], [b"\0" * 15], r"frame has 15 bytes, its meta says 16"),
    ([["out", "<f4", [4]]], [], r"header lists 1 blobs, 0 frames arrived"),
    ([["out", "<f8", [2]]], [b"\0" * 16], r"is \(2,\) float64, the receive buffer is \(4,\)"),
    ([["other", "<f4", [4]]], [b"\0" * 16], r"blob names differ"),
    ([["out", "O", [4]]], [b"\0" * 32], r"non-numeric dtype"),
    ([["out", "<f4", [-4]]], [b""], r"is not \[name, dtype, shape\]"),
    (None, [b"x"], r"1 frames that the header does not announce"),
])
def test_blob_frames_are_checked_before_any_copy(metas, frames, problem):
    logged: list[str] = []
    plan, comm, remote, inbound = view_and_inbound(logged)
    src = plan.regst_descs()[remote].producer_task_id
    body = Msg(READY, src, comm.task_id, remote, 0, 0, 0, 7).header()
    with pytest.raises(MalformedMessage, match=problem):
        inbound.check(body, metas, frames, "p")


def test_logged_once_per_peer_and_counted():
    logged: list[str] = []
    _plan, _comm, _remote, inbound = view_and_inbound(logged)
    for peer in ("a", "a", "a", "b"):
        with pytest.raises(MalformedMessage):
            inbound.check([EORD], None, [], peer)
    assert inbound.dropped == {"a": 3, "b": 1}
    assert len(logged) == 2 and "peer a" in logged[0] and "peer b" in logged[1]
