"""The unit core (``protocol.unit_core``): a drain of messages in, the runtime's actions out.

Two actors of one unit (a source feeding a normal task, which feeds task 9 of another unit)
show the seam's rules on every core: messages between the unit's own actors never come
out, one message at a time with the local queue first, a return as soon as an act starts.
"""

from __future__ import annotations

import pytest

from actorflow.actors.cores import make_unit_core
from actorflow.errors import ProtocolError
from actorflow.protocol.messages import Msg, cmd
from tests.protocol import by_hand
from tests.protocol.by_hand import ack, acts_of, make_task, norm, ready


def two_actor_unit(register_num: int = 2):
    """task 1 (source, desc 10 -> task 2), task 2 (normal, desc 20 -> task 9 elsewhere)."""
    src = make_task(1, "source", produced=[(10, register_num, [2])], piece_num=3)
    mid = make_task(2, "normal", produced=[(20, register_num, [9])], consumed=[10])
    return make_unit_core([src, mid], {10: 1}, "unit u", impl=by_hand.IMPL[0])


def test_local_messages_stay_inside_and_an_act_stops_the_drain():
    core = two_actor_unit()
    out = core.push([cmd(1, "start")])  # one message may start several acts
    assert norm(out) == [("ACT", 1, 0, [], [(10, 0)]), ("ACT", 1, 1, [], [(10, 1)])]
    a0, a1 = acts_of(out)
    out = core.completed([a0])  # its READY goes to task 2 in this unit: an act of task 2
    assert norm(out) == [("ACT", 2, 0, [(10, 0)], [(20, 0)])]
    (b0,) = acts_of(out)
    # task 2's READY leaves the unit; its ACK stays inside and frees the source's slot 0
    out = core.completed([b0])
    assert norm(out) == [("READY", 2, 9, 20, 0, 0, 0), ("ACT", 1, 2, [], [(10, 0)])]
    out = core.completed([a1])
    assert norm(out) == [("ACT", 2, 1, [(10, 1)], [(20, 1)])]
    assert not core.busy


def one_actor_unit():
    """task 2 alone (normal: desc 10 from task 1 of another unit -> desc 20 to task 9)."""
    mid = make_task(2, "normal", produced=[(20, 2, [9])], consumed=[10])
    return make_unit_core([mid], {10: 1}, "unit v", impl=by_hand.IMPL[0])


def test_pushed_messages_wait_in_the_core_behind_an_act():
    core = one_actor_unit()
    out = core.push([ready(1, 2, 10, 0, 0, 0), ready(1, 2, 10, 1, 1, 1)])
    assert norm(out) == [("ACT", 2, 0, [(10, 0)], [(20, 0)])] and core.busy
    # the completion's messages first, then the queued READY's act
    assert norm(core.completed(acts_of(out))) == [
        ("READY", 2, 9, 20, 0, 0, 0), ("ACK", 2, 1, 10, 0, 0), ("ACT", 2, 1, [(10, 1)], [(20, 1)])]
    assert not core.busy


def test_push_with_nothing_goes_on_with_queued_messages():
    core = one_actor_unit()
    out = core.push([ready(1, 2, 10, 0, 0, 0), ready(1, 2, 10, 1, 1, 1)])
    assert core.busy
    assert norm(core.push([])) == [("ACT", 2, 1, [(10, 1)], [(20, 1)])]  # the act 0 still out
    assert not core.busy
    assert core.blocked_on()[0]["inflight_pieces"] == [0, 1]
    assert len(out) == 1


def test_a_message_for_a_task_it_does_not_host_is_refused():
    core = two_actor_unit()
    with pytest.raises(ProtocolError, match=r"unit u got .* for a task it does not host"):
        core.push([cmd(7, "start")])


def test_completing_an_act_of_another_unit_is_refused():
    core = two_actor_unit()
    (a0, _a1) = acts_of(core.push([cmd(1, "start")]))
    a0.task_id = 7
    with pytest.raises(ProtocolError, match="task 7, which it does not host"):
        core.completed([a0])


def test_live_counts_down_to_zero_as_actors_exit():
    core = two_actor_unit(register_num=1)
    assert core.live == 2
    todo = acts_of(core.push([cmd(1, "start", 1)]))
    sent = []
    while todo:
        out = core.completed([todo.pop(0)])
        todo += acts_of(out)
        sent += [m for m in out if type(m) is Msg]
    assert [(m.type, m.dst) for m in sent] == [(0, 9), (2, 9)]  # READY then EORD to task 9
    assert core.live == 1  # the source exited; task 2 waits for task 9's ACK
    out = core.push([ack(9, 2, 20, 0)])
    assert norm(out) == [("EXIT", 2)] and core.live == 0


def test_hosts_names_exactly_the_unit_s_tasks():
    core = two_actor_unit()
    assert [t for t in (1, 2, 9, 0, -1) if core.hosts(t)] == [1, 2]


def test_a_local_message_left_behind_an_act_keeps_the_core_busy():
    core = two_actor_unit()
    a0, a1 = acts_of(core.push([cmd(1, "start")]))
    assert not core.busy
    # both READYs go to task 2 in this unit: the first starts an act, the second waits
    assert norm(core.completed([a0, a1])) == [("ACT", 2, 0, [(10, 0)], [(20, 0)])]
    assert core.busy  # the second READY is in the local queue, nothing was pushed
    assert norm(core.push([])) == [("ACT", 2, 1, [(10, 1)], [(20, 1)])]
    assert not core.busy


def scratch_unit():
    """task 2 (desc 10 from task 1 elsewhere -> desc 20 read by nobody, register_num 1: its
    regst is free again as soon as an act ends) and task 3 (desc 30 from task 1 -> task 9)."""
    two = make_task(2, "normal", produced=[(20, 1, [])], consumed=[10])
    three = make_task(3, "normal", produced=[(40, 2, [9])], consumed=[30])
    return make_unit_core([two, three], {10: 1, 30: 1}, "unit s", impl=by_hand.IMPL[0])


def test_an_act_started_by_a_completion_stops_the_drain_whatever_the_other_completions():
    core = scratch_unit()
    (a0,) = acts_of(core.push([ready(1, 2, 10, 0, 0, 0)]))
    # task 2's second READY waits for its one regst; task 3's first READY starts an act and
    # its second one stays queued behind it
    out = core.push([ready(1, 2, 10, 0, 1, 1), ready(1, 3, 30, 0, 0, 0), ready(1, 3, 30, 1, 1, 1)])
    (b0,) = acts_of(out)
    assert norm(out) == [("ACT", 3, 0, [(30, 0)], [(40, 0)])] and core.busy
    # a0's end frees task 2's regst at once, so it starts the next act itself: the queued
    # READY for task 3 is not looked at in this call, even though b0 started nothing
    out = core.completed([a0, b0])
    assert norm(out) == [("ACK", 2, 1, 10, 0, 0), ("ACT", 2, 1, [(10, 0)], [(20, 0)]),
                         ("READY", 3, 9, 40, 0, 0, 0), ("ACK", 3, 1, 30, 0, 0)]
    assert core.busy
    assert norm(core.push([])) == [("ACT", 3, 1, [(30, 1)], [(40, 1)])]


class _Recorder:
    """The trace hooks a core calls, each call kept."""

    def __init__(self, timed: bool) -> None:
        self.timed = timed
        self.rings: list[Msg] = []
        self.ring = None if timed else self.rings.append
        self.sent: list[Msg] = []
        self.received: list[Msg] = []

    def send(self, msg: Msg) -> None:
        self.sent.append(msg)

    def recv(self, msg: Msg) -> None:
        self.received.append(msg)


def _recorded_run(timed: bool) -> _Recorder:
    rec = _Recorder(timed)
    mid = make_task(2, "normal", produced=[(20, 2, [9])], consumed=[10])
    core = make_unit_core([mid], {10: 1}, "unit r", recorder=rec, impl=by_hand.IMPL[0])
    core.completed(acts_of(core.push([ready(1, 2, 10, 0, 0, 0)])))
    return rec


def test_a_flight_recorder_rings_every_message_and_is_never_called_per_event():
    rec = _recorded_run(timed=False)
    assert rec.sent == [] and rec.received == []
    assert [(m.type_name, m.src, m.dst) for m in rec.rings] == [
        ("READY", 1, 2), ("READY", 2, 9), ("ACK", 2, 1)]


def test_a_timed_recorder_is_told_each_receive_and_send():
    rec = _recorded_run(timed=True)
    assert rec.rings == []
    assert [(m.type_name, m.src, m.dst) for m in rec.received] == [("READY", 1, 2)]
    assert [(m.type_name, m.src, m.dst) for m in rec.sent] == [("READY", 2, 9), ("ACK", 2, 1)]


def test_a_plugin_state_machine_returning_no_action_is_refused_naming_it():
    """A kind registered from outside (``register_kind``) runs on the Python core; what its
    state machine returns is checked, not passed on to the runtime."""
    from actorflow.protocol.kind_record import Kind
    from actorflow.protocol.kinds import KINDS, register_kind
    from actorflow.protocol.state import ActorState

    class Babbler(ActorState):
        kind = "babbler_test_kind"

        def handle(self, msg: Msg) -> list:
            return ["hello"]

    register_kind(Kind("babbler_test_kind", Babbler, lambda t, s: [], "a test-only kind"))
    try:
        task = make_task(3, "babbler_test_kind", produced=[(30, 1, [4])], consumed=[10])
        core = make_unit_core([task], {10: 1}, "unit b", impl="python")
        with pytest.raises(ProtocolError, match=r"unit b: a state machine returned 'hello', "
                                                r"which is no action \(Msg, Act, Exit\)"):
            core.push([ready(1, 3, 10, 0, 0, 0)])
    finally:
        KINDS._entries.pop("babbler_test_kind")
