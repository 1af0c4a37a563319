"""Every rule of the actor protocol, driven by hand with no threads (docs/architecture.md,
"The actor protocol and the unit loop", rules 1-7).

Each test feeds ``Msg`` objects into one pure state machine and compares the returned
actions exactly (as tuples, see ``by_hand.norm``).
"""

from __future__ import annotations

import pytest

from actorflow.errors import ProtocolError
from actorflow.protocol.messages import Msg, cmd
from actorflow.protocol.state import (
    EXITED,
    RUNNING,
    ZOMBIE,
    describe_states,
    describe_wait,
)
from tests.protocol.by_hand import ack, actor, acts_of, eord, norm, ready


def normal(register_num: int = 1, consumers=(3,), inputs=(10,)):
    """Task 2: consumes ``inputs`` (desc d produced by task d - 9), produces desc 20."""
    return actor(2, produced=[(20, register_num, list(consumers))], consumed=list(inputs),
                 producer_of={d: d - 9 for d in inputs})


# -- rule 1: the act condition ---------------------------------------------------------------

def test_acts_when_input_ready_and_output_free():
    a = normal()
    assert norm(a.handle(ready(1, 2, 10, 0, 0, 0))) == [("ACT", 2, 0, [(10, 0)], [(20, 0)])]
    assert a.acts == 1 and len(a.inflight) == 1


def test_waits_for_every_consumed_desc():
    a = normal(inputs=(10, 11))
    assert a.handle(ready(1, 2, 10, 0, 0, 0)) == []
    assert a.blocked_on()["inputs_empty"] == [11]
    out = norm(a.handle(ready(2, 2, 11, 3, 0, 0)))
    assert out == [("ACT", 2, 0, [(10, 0), (11, 3)], [(20, 0)])]


def test_waits_for_a_free_produced_regst():
    a = normal(register_num=1)
    (act,) = acts_of(a.handle(ready(1, 2, 10, 0, 0, 0)))
    a.act_done(act)
    # piece 1 is ready, but the only produced regst is still read by task 3
    assert a.handle(ready(1, 2, 10, 1, 1, 1)) == []
    assert a.blocked_on()["outputs_full"] == [{"regst_desc_id": 20, "held_by": [3]}]
    assert norm(a.handle(ack(3, 2, 20, 0))) == [("ACT", 2, 1, [(10, 1)], [(20, 0)])]


# -- rules 2/3: what happens after an act ------------------------------------------------------

def test_after_act_ready_to_consumers_then_ack_to_producer():
    a = normal(consumers=(3, 4))
    (act,) = acts_of(a.handle(ready(1, 2, 10, 0, 7, 0)))
    assert act.piece_id == 7  # the produced regst carries the piece id of its inputs
    assert norm(a.act_done(act)) == [
        ("READY", 2, 3, 20, 0, 7, 0), ("READY", 2, 4, 20, 0, 7, 0), ("ACK", 2, 1, 10, 0, 7)]


def test_reading_count_frees_the_regst_only_after_every_consumer_acked():
    a = normal(register_num=1, consumers=(3, 4))
    (act,) = acts_of(a.handle(ready(1, 2, 10, 0, 0, 0)))
    a.act_done(act)
    assert a.handle(ready(1, 2, 10, 1, 1, 1)) == []
    assert a.handle(ack(4, 2, 20, 0)) == []  # task 3 still reads it
    assert a.blocked_on()["outputs_full"] == [{"regst_desc_id": 20, "held_by": [3]}]
    (act,) = acts_of(a.handle(ack(3, 2, 20, 0)))
    # seq counts per destination
    assert norm(a.act_done(act)) == [
        ("READY", 2, 3, 20, 0, 1, 1), ("READY", 2, 4, 20, 0, 1, 1), ("ACK", 2, 1, 10, 1, 1)]


@pytest.mark.parametrize("register_num", [1, 2, 3, 4])
def test_register_num_is_how_far_a_producer_runs_ahead(register_num):
    """With a consumer that never acks, exactly register_num pieces get produced."""
    a = normal(register_num=register_num)
    written = []
    for piece in range(6):
        for act in acts_of(a.handle(ready(1, 2, 10, piece, piece, piece))):
            written.append(act.writes[0])
            a.act_done(act)
    assert written == [(20, s) for s in range(register_num)]
    # one ack frees one slot: exactly one more act, into the acked slot
    (act,) = acts_of(a.handle(ack(3, 2, 20, 0)))
    assert act.writes == [(20, 0)] and act.piece_id == register_num


def test_lock_step_with_register_num_1_run_ahead_with_2():
    one, two = normal(register_num=1), normal(register_num=2)
    for a in (one, two):
        (act,) = acts_of(a.handle(ready(1, 2, 10, 0, 0, 0)))
        a.act_done(act)
    assert one.handle(ready(1, 2, 10, 1, 1, 1)) == []
    assert norm(two.handle(ready(1, 2, 10, 1, 1, 1))) == [("ACT", 2, 1, [(10, 1)], [(20, 1)])]


# -- rule 5: EORD and the zombie state ---------------------------------------------------------

def test_eord_then_zombie_until_every_produced_regst_is_acked():
    a = normal(register_num=2)
    (act,) = acts_of(a.handle(ready(1, 2, 10, 0, 0, 0)))
    a.act_done(act)
    assert norm(a.handle(eord(1, 2, 10, 1))) == [("EORD", 2, 3, 20, -1, -1, 1)]
    assert a.status == ZOMBIE  # EORD sent, but slot 0 is still read by task 3
    assert norm(a.handle(ack(3, 2, 20, 0))) == [("EXIT", 2)]
    assert a.status == EXITED


def test_eord_waits_for_queued_regsts_and_comes_after_the_last_ready():
    a = normal(register_num=1)
    (act,) = acts_of(a.handle(ready(1, 2, 10, 0, 0, 0)))
    a.act_done(act)
    assert a.handle(ready(1, 2, 10, 1, 1, 1)) == []
    assert a.handle(eord(1, 2, 10, 2)) == []  # piece 1 still queued: no EORD yet
    assert a.status == RUNNING
    (act,) = acts_of(a.handle(ack(3, 2, 20, 0)))
    assert norm(a.act_done(act)) == [
        ("READY", 2, 3, 20, 0, 1, 1), ("ACK", 2, 1, 10, 1, 1), ("EORD", 2, 3, 20, -1, -1, 2)]
    assert norm(a.handle(ack(3, 2, 20, 0))) == [("EXIT", 2)]


def test_eord_with_acts_in_flight_waits_for_the_last_act_done():
    a = normal(register_num=2)
    (a0,) = acts_of(a.handle(ready(1, 2, 10, 0, 0, 0)))
    (a1,) = acts_of(a.handle(ready(1, 2, 10, 1, 1, 1)))  # two acts in flight
    assert a.handle(eord(1, 2, 10, 2)) == []
    assert norm(a.act_done(a0)) == [("READY", 2, 3, 20, 0, 0, 0), ("ACK", 2, 1, 10, 0, 0)]
    out = norm(a.act_done(a1))
    assert out == [("READY", 2, 3, 20, 1, 1, 1), ("ACK", 2, 1, 10, 1, 1),
                   ("EORD", 2, 3, 20, -1, -1, 2)]
    a.handle(ack(3, 2, 20, 1))
    assert norm(a.handle(ack(3, 2, 20, 0))) == [("EXIT", 2)]


def test_eord_with_nothing_produced_exits_at_once():
    a = normal(consumers=(3, 4))
    assert norm(a.handle(eord(1, 2, 10, 0))) == [
        ("EORD", 2, 3, 20, -1, -1, 0), ("EORD", 2, 4, 20, -1, -1, 0), ("EXIT", 2)]


def test_eord_needs_every_consumed_desc():
    a = normal(inputs=(10, 11))
    assert a.handle(eord(1, 2, 10, 0)) == []
    assert a.blocked_on()["inputs_eord"] == [10]
    assert norm(a.handle(eord(2, 2, 11, 0)))[-1] == ("EXIT", 2)


def test_inputs_with_different_piece_counts_are_a_protocol_error():
    a = normal(inputs=(10, 11))
    a.handle(ready(1, 2, 10, 0, 0, 0))
    a.handle(eord(1, 2, 10, 1))
    with pytest.raises(ProtocolError, match="different piece counts"):
        a.handle(eord(2, 2, 11, 0))


# -- protocol violations -----------------------------------------------------------------------

def test_out_of_order_ready_is_a_protocol_error():
    a = normal()
    with pytest.raises(ProtocolError, match=r"regst desc 10 message out of order \(seq 1, "
                                            r"expected 0\)"):
        a.handle(ready(1, 2, 10, 0, 0, 1))


def test_eord_overtaking_a_ready_is_a_protocol_error():
    a = normal()
    with pytest.raises(ProtocolError, match="EORD on regst desc 10 overtook a READY"):
        a.handle(eord(1, 2, 10, 3))


def test_ready_after_eord_is_a_protocol_error():
    a = normal(inputs=(10, 11))
    a.handle(eord(1, 2, 10, 0))
    with pytest.raises(ProtocolError, match="READY on regst desc 10 after its EORD"):
        a.handle(ready(1, 2, 10, 0, 0, 1))


@pytest.mark.parametrize("msg, what", [
    (ready(1, 2, 99, 0, 0, 0), "READY for regst desc 99, which it does not consume"),
    (eord(1, 2, 99, 0), "EORD for regst desc 99, which it does not consume"),
    (ack(3, 2, 99, 0), "ACK for regst desc 99, which it does not produce"),
])
def test_unknown_regst_desc_is_a_protocol_error(msg, what):
    with pytest.raises(ProtocolError, match=what):
        normal().handle(msg)


def test_ack_for_a_free_regst_is_a_protocol_error():
    with pytest.raises(ProtocolError, match="unexpected ACK from task 3 for regst desc 20 slot 0"):
        normal().handle(ack(3, 2, 20, 0))


@pytest.mark.parametrize("slot", [5, 2, -1])
def test_ack_for_a_slot_out_of_range_is_a_protocol_error(slot):
    with pytest.raises(ProtocolError, match=f"slot {slot} \\(not held by it\\)"):
        normal(register_num=2).handle(ack(3, 2, 20, slot))


def test_double_ack_is_a_protocol_error():
    a = normal(register_num=1)
    (act,) = acts_of(a.handle(ready(1, 2, 10, 0, 0, 0)))
    a.act_done(act)
    a.handle(ack(3, 2, 20, 0))
    with pytest.raises(ProtocolError, match="unexpected ACK from task 3"):
        a.handle(ack(3, 2, 20, 0))


def test_double_ack_by_one_consumer_while_another_still_reads_is_caught():
    """Reading counts are per consumer: task 3 acking twice must not free task 4's regst."""
    a = normal(register_num=2, consumers=(3, 4))
    for piece in range(2):
        (act,) = acts_of(a.handle(ready(1, 2, 10, piece, piece, piece)))
        a.act_done(act)
    a.handle(ack(3, 2, 20, 0))
    with pytest.raises(ProtocolError, match="unexpected ACK from task 3 for regst desc 20 slot 0"):
        a.handle(ack(3, 2, 20, 0))


def test_ack_from_a_task_that_is_not_a_consumer_is_a_protocol_error():
    a = normal(register_num=1)
    (act,) = acts_of(a.handle(ready(1, 2, 10, 0, 0, 0)))
    a.act_done(act)
    with pytest.raises(ProtocolError, match="unexpected ACK from task 8"):
        a.handle(ack(8, 2, 20, 0))


def test_act_done_twice_is_a_protocol_error():
    a = normal()
    (act,) = acts_of(a.handle(ready(1, 2, 10, 0, 0, 0)))
    a.act_done(act)
    with pytest.raises(ProtocolError, match="completed twice"):
        a.act_done(act)


def test_message_after_exit_is_a_protocol_error():
    a = normal()
    a.handle(eord(1, 2, 10, 0))
    with pytest.raises(ProtocolError, match="after it exited"):
        a.handle(ready(1, 2, 10, 0, 0, 1))


def test_unknown_command_and_unknown_type_are_protocol_errors():
    with pytest.raises(ProtocolError, match="does not take command 'feed'"):
        normal().handle(cmd(2, "feed"))
    with pytest.raises(ProtocolError, match="unknown message type 9"):
        normal().handle(Msg(9, 1, 2, 10))


def test_consumed_desc_without_producer_is_rejected_at_construction():
    with pytest.raises(ProtocolError, match="consumed regst desc 10 has no producer"):
        actor(2, produced=[(20, 1, [3])], consumed=[10], producer_of={})


def test_message_ids_are_unique_per_actor():
    """READY, ACK and EORD alike, over an actor's whole life, and across actors (the id
    carries the task id in its upper half)."""
    ids = []
    for task in (2, 3):
        a = actor(task, produced=[(20 + task, 4, [7, 8])], consumed=[10],
                  producer_of={10: 1})
        for piece in range(4):
            for act in acts_of(a.handle(ready(1, task, 10, piece, piece, piece))):
                ids += [m.msg_id for m in a.act_done(act) if isinstance(m, Msg)]
        ids += [m.msg_id for m in a.handle(eord(1, task, 10, 4)) if isinstance(m, Msg)]
        assert all(m >> 32 == task for m in ids[-14:])
    assert len(ids) == 28 and len(set(ids)) == 28  # 8 READY, 4 ACK, 2 EORD per actor


def test_messages_round_trip_as_plain_lists_through_msgpack():
    import msgpack

    a = normal(register_num=2, consumers=(3,))
    (act,) = acts_of(a.handle(ready(1, 2, 10, 0, 4, 0)))
    for m in [*a.act_done(act), cmd(2, "feed", 3)]:
        back = Msg.from_header(msgpack.unpackb(msgpack.packb(m.header())))
        assert back == m and hash(back) == hash(m) and repr(back) == repr(m)


@pytest.mark.parametrize("seq", [1, 0, -1, 7])
def test_a_second_eord_on_a_desc_is_a_protocol_error(seq):
    """Seq 1 is the next one in order: only the EORD already seen can refuse it."""
    a = normal(inputs=(10, 11), register_num=1)
    a.handle(eord(1, 2, 10, 0))
    with pytest.raises(ProtocolError, match=r"task 2: a second EORD on regst desc 10$"):
        a.handle(eord(1, 2, 10, seq))  # the next seq, the same EORD again, or any other


def test_blocked_on_lists_what_each_input_and_output_holds():
    a = normal(inputs=(10, 11, 12), register_num=2, consumers=(3, 4))
    a.handle(ready(1, 2, 10, 0, 0, 0))
    a.handle(ready(1, 2, 10, 1, 1, 1))
    a.handle(eord(3, 2, 12, 0))
    s = a.blocked_on()
    assert s["inputs_empty"] == [11]  # 12 ended: it waits for nothing there
    assert s["inputs_eord"] == [12]
    assert s["queued"] == {10: 2}  # empty inputs are not listed
    assert s["outputs_full"] == [] and s["outputs_held"] == []
    b = normal(register_num=2, consumers=(3, 4))
    for piece in range(2):
        (act,) = acts_of(b.handle(ready(1, 2, 10, piece, piece, piece)))
        b.act_done(act)
    b.handle(ack(3, 2, 20, 0))
    b.handle(ack(4, 2, 20, 0))
    b.handle(ack(3, 2, 20, 1))
    s = b.blocked_on()
    assert s["outputs_held"] == [{"regst_desc_id": 20, "held_by": [4], "free": 1}]
    assert s["outputs_full"] == [] and s["queued"] == {} and s["inputs_empty"] == [10]


def test_describe_wait_and_describe_states_say_who_waits_for_whom():
    # desc 13's producer is task 4 (not task 2 itself: its ACK would stay in the unit)
    a = normal(inputs=(10, 13), register_num=1, consumers=(3,))
    (act,) = acts_of(a.handle(ready(1, 2, 10, 0, 0, 0)) + a.handle(ready(4, 2, 13, 0, 0, 0)))
    a.act_done(act)
    s = a.blocked_on()
    assert describe_wait(s) == ("waits for READY on regst descs [10, 13]; regst desc 20 has "
                                "no free regst (held by tasks [3])")
    idle = {**s, "inputs_empty": [], "outputs_full": []}
    assert describe_wait(idle) == "idle"
    line = describe_states([s, idle], limit=8)
    assert line == (f"task 2 ({s['label']}, running): {describe_wait(s)}; "
                    f"task 2 ({s['label']}, running): idle")
    assert describe_states([idle] * 3, limit=2) == (
        f"task 2 ({s['label']}, running): idle; task 2 ({s['label']}, running): idle"
        " and 1 more")
    assert describe_states([idle] * 2, limit=2).endswith("running): idle")  # no "more"
    assert describe_states([]) == "no live actors"
    assert describe_states([idle] * 8).count("idle") == 8  # the default limit is 8
    assert describe_states([idle] * 9).endswith(" and 1 more")
