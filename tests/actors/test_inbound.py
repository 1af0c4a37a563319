"""The receiver's checks (actors/inbound.py), rule by rule, on a real two-machine plan."""

from __future__ import annotations

import numpy as np
import pytest

import actorflow as af
from actorflow.actors.inbound import Inbound
from actorflow.actors.machine_view import MachineView
from actorflow.errors import MalformedMessage
from actorflow.protocol.messages import ACK, CLIENT, CMD, EORD, READY, SEND, STOP, Msg, cmd


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
    assert inbound.check(Msg(CMD, CLIENT, comm.task_id, cmd=STOP).header(), None, []) is not None
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
    (lambda b: [*b[:4], 2**31, *b[5:]], r"slot 2147483648 does not fit"),
    (lambda b: [*b[:8], 3, b[9]], r"a READY with command code 3"),
    (lambda b: [*b[:9], "x"], r"must be 64-bit integers"),
    (lambda b: [CMD, CLIENT, *b[2:8], 9, -1], r"command 9 from task -1"),
    (lambda b: [CMD, 5, *b[2:8], STOP, -1], r"command 2 from task 5"),
    (lambda b: [CMD, CLIENT, *b[2:8], SEND, -1], r"'send' command without a critical"),
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


# -- the complete table: every field at and past its edge ---------------------------------

def _ready_body(plan, comm, remote, **field):
    src = plan.regst_descs()[remote].producer_task_id
    h = Msg(READY, src, comm.task_id, remote, 0, 0, 0, 7).header()
    names = ("type", "src", "dst", "desc", "slot", "piece", "seq", "msg_id", "cmd", "aux")
    for k, v in field.items():
        h[names.index(k)] = v
    return h


INT_ERR = r"ids, slot, piece, seq, msg id, command and aux must be 64-bit integers"
HEADERS = [  # (field overrides of a valid remote READY, what the drop says)
    ({"type": -1}, r"message type -1"), ({"type": 4}, r"message type 4"),
    ({"type": "READY"}, r"message type 'READY'"), ({"type": None}, r"message type None"),
    ({"type": 1.0}, r"message type 1\.0"), ({"type": False}, r"message type False"),
    ({"src": 2**63}, INT_ERR), ({"src": -2}, INT_ERR), ({"src": True}, INT_ERR),
    ({"src": 1.0}, INT_ERR), ({"src": "1"}, INT_ERR), ({"src": 4096}, r"sender task 4096"),
    ({"dst": 2**63}, INT_ERR), ({"dst": None}, INT_ERR), ({"dst": -1}, r"destination task -1"),
    ({"desc": 2**63}, INT_ERR), ({"desc": [1]}, INT_ERR), ({"desc": -1}, r"regst desc -1 is"),
    ({"slot": -1}, r"slot -1 outside \[0, 2\)"), ({"slot": 2}, r"slot 2 outside \[0, 2\)"),
    ({"slot": -2}, INT_ERR), ({"slot": 2**63}, INT_ERR), ({"slot": False}, INT_ERR),
    ({"piece": -2}, INT_ERR), ({"piece": 2**63}, INT_ERR), ({"piece": 0.5}, INT_ERR),
    ({"seq": -1}, r"negative seq -1"), ({"seq": -2}, INT_ERR), ({"seq": 2**63}, INT_ERR),
    ({"seq": True}, INT_ERR),
    ({"msg_id": -1}, INT_ERR), ({"msg_id": 2**63}, INT_ERR), ({"msg_id": "7"}, INT_ERR),
    ({"cmd": -1}, INT_ERR), ({"cmd": "feed"}, INT_ERR),
    ({"cmd": 3}, r"a READY with command code 3"),
    ({"aux": -2}, INT_ERR), ({"aux": None}, INT_ERR), ({"aux": 2**63}, INT_ERR),
    ({"slot": 2**31}, r"slot 2147483648 does not fit a record's 32 bits"),
]


@pytest.mark.parametrize("field, problem", HEADERS,
                         ids=[f"{next(iter(f))}={next(iter(f.values()))!r}" for f, _ in HEADERS])
def test_every_header_field_out_of_range_is_dropped_and_counted(field, problem):
    logged: list[str] = []
    plan, comm, remote, inbound = view_and_inbound(logged)
    body = _ready_body(plan, comm, remote, **field)
    with pytest.raises(MalformedMessage, match=r"malformed message from peer p dropped \(" +
                       problem):
        inbound.check(body, None, [], "p")
    assert inbound.dropped == {"p": 1} and len(logged) == 1


@pytest.mark.parametrize("field", [{"slot": 1}, {"seq": 0}, {"seq": 2**63 - 1},
                                   {"piece": -1}, {"piece": 2**63 - 1}, {"msg_id": 0},
                                   {"msg_id": 2**63 - 1}])
def test_every_header_field_at_its_edge_passes(field):
    logged: list[str] = []
    plan, comm, remote, inbound = view_and_inbound(logged)
    msg = inbound.check(_ready_body(plan, comm, remote, **field), None, [], "p")
    (k, v), = field.items()
    assert getattr(msg, "msg_id" if k == "msg_id" else {"piece": "piece_id"}.get(k, k)) == v
    assert inbound.dropped == {} and not logged


def _ack_and_eord(plan, comm, remote):
    """The remote producer's task id and a valid EORD from it into the comm_net."""
    src = plan.regst_descs()[remote].producer_task_id
    eord = Msg(EORD, src, comm.task_id, remote, -1, -1, 3, 9).header()
    return src, eord


@pytest.mark.parametrize("t, slot, metas, frames, problem", [
    (EORD, -1, [["out", "<f4", [4]]], [b"\0" * 16], r"a EORD carries blobs"),
    (READY, 0, [["out", "<i4", [4]]], [b"\0" * 16],  # the right byte size, another dtype
     r"blob 'out' is \(4,\) int32, the receive buffer is \(4,\) float32"),
    (READY, 0, [["out", ">f4", [4]]], [b"\0" * 16],  # the other byte order
     r"blob 'out' is \(4,\) >f4, the receive buffer is \(4,\) float32"),
    (READY, 0, [["out", "<f4", [2, 2]]], [b"\0" * 16],  # the right byte size, another shape
     r"blob 'out' is \(2, 2\) float32, the receive buffer is \(4,\) float32"),
    (READY, 0, [["out", "<f4", [4]], ["out", "<f4", [4]]], [b"\0" * 16] * 2,
     r"blob names differ from the receive buffer.s"),  # one blob twice
    (READY, 0, [["out", "<f4", [4]]], [b"\0" * 16, b"\0" * 16],
     r"header lists 1 blobs, 2 frames arrived"),
    (READY, 0, "out", [b"\0" * 16], r"header lists 3 blobs, 1 frames arrived"),
    (READY, 0, [["out", "<f4"]], [b"\0" * 16], r"is not \[name, dtype, shape\]"),
    (READY, 0, [[7, "<f4", [4]]], [b"\0" * 16], r"blob names differ|is not \[name"),
    (READY, 0, [["out", "<f4", [True]]], [b"\0" * 16], r"is not \[name, dtype, shape\]"),
    (READY, 0, [["out", "xyz", [4]]], [b"\0" * 16], r"blob 'out' has dtype 'xyz'"),
    (READY, 0, [["out", "<U4", [4]]], [b"\0" * 64], r"non-numeric dtype"),
    (READY, 0, [["out", "<M8[s]", [4]]], [b"\0" * 32], r"non-numeric dtype"),
    (READY, 0, [["out", "<f4", [2**62]]], [b"\0" * 16], r"frame has 16 bytes, its meta says"),
])
def test_every_blob_frame_problem_is_dropped_and_counted(t, slot, metas, frames, problem):
    logged: list[str] = []
    plan, comm, remote, inbound = view_and_inbound(logged)
    body = _ready_body(plan, comm, remote, type=t, slot=slot,
                       piece=-1 if t == EORD else 0)
    with pytest.raises(MalformedMessage, match=problem):
        inbound.check(body, metas, frames, "q")
    assert inbound.dropped == {"q": 1} and len(logged) == 1


def test_blobs_on_a_message_with_no_receive_buffer_are_checked_for_shape_alone():
    logged: list[str] = []
    plan, comm, remote, _ = view_and_inbound(logged)
    view = MachineView(plan.for_machine(1), 1)
    inbound = Inbound("machine 1", view.routing, view.descs,
                      hosted=lambda t: view.routing.get(t, (None,))[0] == 1,
                      buffers=lambda d: None, log=logged.append)
    ok = _ready_body(plan, comm, remote)
    assert inbound.check(ok, [["any", "<i8", [2]]], [b"\0" * 16], "r").type == READY
    with pytest.raises(MalformedMessage, match=r"frame has 8 bytes, its meta says 16"):
        inbound.check(ok, [["any", "<i8", [2]]], [b"\0" * 8], "r")
    assert inbound.dropped == {"r": 1}


@pytest.mark.parametrize("code, src, problem", [
    (9, CLIENT, r"command 9 from task -1"),
    (0, CLIENT, r"command 0 from task -1"),
    (STOP, 0, r"command 2 from task 0"),
    ("stop", CLIENT, INT_ERR),
])
def test_commands_from_anyone_but_the_client_or_unknown_are_dropped(code, src, problem):
    logged: list[str] = []
    _plan, comm, _remote, inbound = view_and_inbound(logged)
    body = Msg(CMD, src, comm.task_id, cmd=code).header()
    with pytest.raises(MalformedMessage, match=problem):
        inbound.check(body, None, [], "c")
    assert inbound.dropped == {"c": 1}


@pytest.mark.parametrize("name", ["start", "stop", "feed", "close", "send"])
def test_every_known_command_passes(name):
    logged: list[str] = []
    _plan, comm, _remote, inbound = view_and_inbound(logged)
    arg = 0 if name == "send" else None  # a send names its critical section
    msg = inbound.check(cmd(comm.task_id, name, arg).header(), None, [])
    assert msg.cmd_name == name and msg.arg == arg
    assert inbound.dropped == {}


def test_an_eord_and_an_ack_on_the_right_link_pass():
    logged: list[str] = []
    plan, comm, remote, inbound = view_and_inbound(logged)
    src, eord = _ack_and_eord(plan, comm, remote)
    assert inbound.check(eord, None, [], "e").type == EORD
    # an ACK travels back: from the consumer (the comm_net, not hosted here) to a producer
    # hosted here; machine 1 hosts no producer of a desc the comm_net consumes, so the
    # same link read as an ACK does not link the pair in that direction
    ack = Msg(ACK, comm.task_id, src, remote, 0, 0, 0, 5).header()
    with pytest.raises(MalformedMessage, match="destination task"):
        inbound.check(ack, None, [], "e")
    assert inbound.dropped == {"e": 1}


def test_a_malformed_message_is_an_error_only_when_the_run_is_keyed(monkeypatch):
    logged: list[str] = []
    _plan, _comm, _remote, inbound = view_and_inbound(logged)
    assert not inbound.strict
    import actorflow.actors.inbound as ib

    monkeypatch.setattr(ib, "current_key", lambda: object())
    assert inbound.strict


def _no_buffers(logged):
    plan, comm, remote, _ = view_and_inbound(logged)
    view = MachineView(plan.for_machine(1), 1)
    return plan, comm, remote, Inbound("machine 1", view.routing, view.descs,
                                       hosted=lambda t: view.routing.get(t, (None,))[0] == 1,
                                       buffers=lambda d: None, log=logged.append)


@pytest.mark.parametrize("metas, frames, problem", [
    ([("out", "<f4", [4])], [b"\0" * 16], r"is not \[name, dtype, shape\]"),  # not a list
    ([[7, "<f4", [4]]], [b"\0" * 16], r"is not \[name, dtype, shape\]"),  # name no str
    ([["out", 4, [4]]], [b"\0" * 16], r"is not \[name, dtype, shape\]"),  # dtype no str
    ([["out", "<f4", (4,)]], [b"\0" * 16], r"is not \[name, dtype, shape\]"),  # shape no list
    ([["out", "<f4", [4, -1]]], [b"\0" * 16], r"is not \[name, dtype, shape\]"),
    ([["out", "<f4", [4], 0]], [b"\0" * 16], r"is not \[name, dtype, shape\]"),  # 4 fields
    ("ab", [b"\0" * 8, b"\0" * 8], r"header lists 2 blobs, 2 frames arrived"),  # no list
    ([["out", "<f4", [4]]], [b"\0" * 15], r"frame has 15 bytes, its meta says 16"),
])
def test_blob_metas_are_checked_field_by_field_without_a_buffer(metas, frames, problem):
    logged: list[str] = []
    plan, comm, remote, inbound = _no_buffers(logged)
    with pytest.raises(MalformedMessage, match=problem):
        inbound.check(_ready_body(plan, comm, remote), metas, frames, "m")
    assert inbound.dropped == {"m": 1}


def test_a_zero_size_blob_and_several_blobs_pass_without_a_buffer():
    logged: list[str] = []
    plan, comm, remote, inbound = _no_buffers(logged)
    ok = _ready_body(plan, comm, remote)
    assert inbound.check(ok, [["e", "<f8", [0, 3]], ["b", "|b1", [2]]], [b"", b"\0\1"]).slot == 0
    assert inbound.dropped == {}


@pytest.mark.parametrize("metas", [[5], [[]], [("out", "<f4", [4])], ["out"]])
def test_blob_metas_that_are_no_lists_never_match_the_receive_buffer(metas):
    logged: list[str] = []
    plan, comm, remote, inbound = view_and_inbound(logged)
    with pytest.raises(MalformedMessage, match=r"blob names differ from the receive buffer"):
        inbound.check(_ready_body(plan, comm, remote), metas, [b"\0" * 16], "n")
    assert inbound.dropped == {"n": 1}


@pytest.mark.parametrize("body, problem", [
    ("0123456789", r"header is str of 10 fields, expected 10"),
    (tuple(range(10)), r"header is tuple of 10 fields, expected 10"),
    (5, r"header is int of 0 fields, expected 10"),
    (None, r"header is NoneType of 0 fields, expected 10"),
])
def test_a_header_that_is_no_list_is_dropped(body, problem):
    logged: list[str] = []
    _plan, _comm, _remote, inbound = view_and_inbound(logged)
    with pytest.raises(MalformedMessage, match=problem):
        inbound.check(body, None, [], "h")
    assert inbound.dropped == {"h": 1}


def test_a_ready_must_come_from_the_producer_and_go_to_a_consumer_of_its_desc():
    logged: list[str] = []
    plan, comm, remote, inbound = view_and_inbound(logged)
    producer = plan.regst_descs()[remote].producer_task_id
    other_src = next(t.task_id for t in plan.tasks if t.task_id not in (
        producer, comm.task_id))  # in the plan, but not the desc's producer
    other_dst = next(t.task_id for t in plan.tasks if t.machine_id == 1 and
                     t.task_id != comm.task_id)  # hosted here, but no consumer of it
    for body in (_ready_body(plan, comm, remote, src=other_src),
                 _ready_body(plan, comm, remote, dst=other_dst)):
        with pytest.raises(MalformedMessage, match=rf"regst desc {remote} does not link task"):
            inbound.check(body, None, [], "l")
    assert inbound.dropped == {"l": 2}


def test_without_a_log_the_first_drop_of_a_peer_goes_to_stderr(capsys):
    plan = view_and_inbound([])[0]
    view = MachineView(plan.for_machine(1), 1)
    inbound = Inbound("machine 1", view.routing, view.descs,
                      hosted=lambda t: view.routing.get(t, (None,))[0] == 1,
                      buffers=lambda d: None)
    for _ in range(2):
        with pytest.raises(MalformedMessage):
            inbound.check([EORD], None, [], "s")
    err = capsys.readouterr().err
    assert err.count("malformed message from peer s dropped") == 1, err


def test_a_slot_past_a_records_32_bits_is_dropped_even_on_a_command():
    logged: list[str] = []
    _plan, comm, _remote, inbound = view_and_inbound(logged)
    stop = Msg(CMD, CLIENT, comm.task_id, cmd=STOP).header()
    stop[4] = 2**31 - 1  # the largest int32: a record holds it
    assert inbound.check(stop, None, []).type == CMD
    stop[4] = 2**31
    with pytest.raises(MalformedMessage, match=r"slot 2147483648 does not fit a record's 32"):
        inbound.check(stop, None, [], "z")
    assert inbound.dropped == {"z": 1}


def test_a_command_code_past_the_known_ones_is_dropped():
    logged: list[str] = []
    _plan, comm, _remote, inbound = view_and_inbound(logged)
    last = Msg(CMD, CLIENT, comm.task_id, cmd=SEND, aux=0).header()
    assert inbound.check(last, None, []).cmd == SEND  # the last code there is
    past = Msg(CMD, CLIENT, comm.task_id, cmd=SEND + 1).header()
    with pytest.raises(MalformedMessage, match=rf"command {SEND + 1} from task -1"):
        inbound.check(past, None, [], "z")
