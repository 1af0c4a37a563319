"""The kinds' state machines at their edges (found by mutation testing, ``tools/mutate.py``):
gated sources, stop after a count, commands a kind does not take, default and invalid
attrs, constructors that refuse a task of the wrong shape, and what ``blocked_on`` says."""

from __future__ import annotations

import pytest

from actorflow.errors import ProtocolError
from actorflow.protocol.messages import EORD, READY, Msg, cmd
from actorflow.protocol.state import EXITED, ZOMBIE
from tests.protocol.by_hand import ack, actor, acts_of, eord, norm, ready


def _drain(a, actions) -> list:
    """Complete every act at once; every message sent, in order."""
    msgs = [m for m in actions if type(m) is Msg]
    todo = acts_of(actions)
    while todo:
        more = a.act_done(todo.pop(0))
        msgs += [m for m in more if type(m) is Msg]
        todo += acts_of(more)
    return msgs


# -- sources and inputs ---------------------------------------------------------------------

def test_a_gated_source_acts_on_every_gate_tick_with_no_start():
    s = actor(0, "source", produced=[(20, 4, [3])], consumed=[10], producer_of={10: 1},
              gated=True)
    assert s.blocked_on()["budget"] is None  # unbounded: its gate paces it
    assert norm(s.handle(ready(1, 0, 10, 0, 0, 0))) == [("ACT", 0, 0, [(10, 0)], [(20, 0)])]


def test_a_source_with_two_gates_ends_only_when_both_ended():
    s = actor(0, "source", produced=[(20, 4, [3])], consumed=[10, 11],
              producer_of={10: 1, 11: 2}, gated=True)
    _drain(s, s.handle(ready(1, 0, 10, 0, 0, 0)) + s.handle(ready(2, 0, 11, 0, 0, 0)))
    assert s.pieces_made == 1
    assert s.handle(eord(1, 0, 10, 1)) == []  # gate 11 may still tick
    assert s.status not in (ZOMBIE, EXITED)
    assert norm(_drain(s, s.handle(eord(2, 0, 11, 1)))) == [("EORD", 0, 3, 20, -1, -1, 1)]


def test_an_ungated_source_with_a_tick_waits_for_start():
    s = actor(0, "source", produced=[(20, 4, [3])], consumed=[10], producer_of={10: 1})
    assert s.blocked_on()["budget"] == 0
    assert s.handle(ready(1, 0, 10, 0, 0, 0)) == []


def test_a_gated_input_still_needs_feeds():
    """Only sources are gated: an input's budget is its feeds, gate or not."""
    i = actor(0, "input", produced=[(20, 4, [3])], consumed=[10], producer_of={10: 1},
              gated=True)
    assert i.blocked_on()["budget"] == 0
    assert i.handle(ready(1, 0, 10, 0, 0, 0)) == []
    assert len(acts_of(i.handle(cmd(0, "feed")))) == 1


def test_a_gated_source_ignores_stop_and_ends_with_its_gate():
    s = actor(0, "source", produced=[(20, 4, [3])], consumed=[10], producer_of={10: 1},
              gated=True)
    _drain(s, s.handle(ready(1, 0, 10, 0, 0, 0)))
    assert s.handle(cmd(0, "stop")) == [] and not s.blocked_on()["closed"]
    _drain(s, s.handle(ready(1, 0, 10, 1, 1, 1)))  # it still acts on the next tick
    assert s.pieces_made == 2
    msgs = _drain(s, s.handle(eord(1, 0, 10, 2)))
    assert norm(msgs) == [("EORD", 0, 3, 20, -1, -1, 2)]


def test_a_generator_ends_only_when_every_tick_input_ended_and_was_used():
    s = actor(0, "source", produced=[(20, 1, [3])], consumed=[10, 11],
              producer_of={10: 1, 11: 2}, gated=True)
    s.handle(eord(1, 0, 10, 0))  # one gate ended, the other not
    assert s.status != ZOMBIE
    t = actor(0, "source", produced=[(20, 1, [3])], consumed=[10], producer_of={10: 1},
              gated=True)
    (a0,) = acts_of(t.handle(ready(1, 0, 10, 0, 0, 0)))
    t.act_done(a0)
    assert t.handle(ready(1, 0, 10, 1, 1, 1)) == []  # its one regst is held by task 3
    assert t.handle(eord(1, 0, 10, 2)) == []  # ended, but a tick is still queued: no EORD
    msgs = _drain(t, t.handle(ack(3, 0, 20, 0)))
    assert norm(msgs)[-1] == ("EORD", 0, 3, 20, -1, -1, 2)


def test_stop_after_a_count_keeps_the_smaller_count():
    s = actor(0, "source", produced=[(20, 2, [3])], piece_num=5)
    acts = acts_of(s.handle(cmd(0, "start")))
    assert len(acts) == 2  # two regsts: two pieces under way
    assert s.handle(cmd(0, "stop")) == []
    s.act_done(acts[0])
    out = s.act_done(acts[1])
    assert norm(out)[-1] == ("EORD", 0, 3, 20, -1, -1, 2)  # stopped at 2 of 5
    assert s.blocked_on()["budget"] == 2 and s.blocked_on()["closed"]


def test_blocked_on_of_a_generator_says_budget_pieces_and_closed():
    i = actor(0, "input", produced=[(20, 2, [3])])
    i.handle(cmd(0, "feed", 3))
    s = i.blocked_on()
    assert (s["budget"], s["pieces_made"], s["closed"]) == (3, 2, False)  # 2 regsts
    i.handle(cmd(0, "close"))
    assert i.blocked_on()["closed"]


@pytest.mark.parametrize("kind, bad", [("source", "feed"), ("source", "send"),
                                       ("input", "start"), ("input", "stop")])
def test_a_command_a_kind_does_not_take_is_refused(kind, bad):
    a = actor(0, kind, produced=[(20, 1, [3])], piece_num=1)
    with pytest.raises(ProtocolError, match=f"does not take command '{bad}'"):
        a.handle(cmd(0, bad))


# -- acc and repeat --------------------------------------------------------------------------

def test_acc_without_acc_num_passes_every_piece_on():
    a = actor(2, "acc", produced=[(20, 2, [3])], consumed=[10], producer_of={10: 1})
    msgs = []
    for p in range(3):
        msgs += _drain(a, a.handle(ready(1, 2, 10, p % 2, p, p)))
        a.handle(ack(3, 2, 20, p % 2))
    assert [m.piece_id for m in msgs if m.type == READY] == [0, 1, 2]


def test_repeat_without_repeat_num_uses_each_piece_once():
    r = actor(2, "repeat", produced=[(20, 2, [3])], consumed=[10], producer_of={10: 1})
    msgs = _drain(r, r.handle(ready(1, 2, 10, 0, 0, 0)))
    assert [(m.type, m.piece_id) for m in msgs] == [(READY, 0), (1, 0)]  # READY, then ACK


@pytest.mark.parametrize("kind, attr", [("acc", "acc_num"), ("repeat", "repeat_num")])
@pytest.mark.parametrize("shape", ["zero", "two_in", "two_out"])
def test_acc_and_repeat_refuse_a_task_of_the_wrong_shape(kind, attr, shape):
    produced = [(20, 1, [3])] + ([(21, 1, [4])] if shape == "two_out" else [])
    consumed = [10] + ([11] if shape == "two_in" else [])
    n = 0 if shape == "zero" else 2
    with pytest.raises(ProtocolError, match=rf"\({kind}\): needs {attr} >= 1, one consumed "
                                            "and one produced regst desc"):
        actor(2, kind, produced=produced, consumed=consumed, producer_of={10: 1, 11: 5},
              **{attr: n})


# -- what an exited actor says -----------------------------------------------------------------

def test_an_output_exits_after_eord_and_says_so():
    o = actor(3, "output", consumed=[20], producer_of={20: 2})
    _drain(o, o.handle(ready(2, 3, 20, 0, 0, 0)))
    assert norm(o.handle(eord(2, 3, 20, 1))) == [("EXIT", 3)]
    assert o.status == EXITED


# -- the main job's kinds ----------------------------------------------------------------------
START, END, OUT = 10, 11, 12


def _lock(**attrs):
    kw = {"start_desc": START, "end_desc": END, "conflicts": {"0": [0]}, **attrs}
    return actor(5, "reentrant_lock", produced=[(OUT, 2, [6])], consumed=[START, END],
                 producer_of={START: 4, END: 7}, **kw)


def _id(src, dst, desc, slot, piece, seq, cs):
    return Msg(READY, src, dst, desc, slot, piece, seq, aux=cs)


def test_wait_and_send_ids_refuses_ids_out_of_range_and_after_close():
    w = actor(4, "wait_and_send_ids", produced=[(START, 2, [5])], num_critical_sections=2)
    for bad in (2, 7):
        with pytest.raises(ProtocolError, match=rf"critical section id {bad} is not in \[0, 2\)"):
            w.handle(cmd(4, "send", bad))
    assert len(acts_of(w.handle(cmd(4, "send", 1)))) == 1  # the last valid id
    w.handle(cmd(4, "close"))
    with pytest.raises(ProtocolError, match=r"id sent after close"):
        w.handle(cmd(4, "send", 0))
    with pytest.raises(ProtocolError, match=r"does not take command 'start'"):
        w.handle(cmd(4, "start"))


def test_wait_and_send_ids_without_sections_takes_no_id():
    w = actor(4, "wait_and_send_ids", produced=[(START, 2, [5])])
    with pytest.raises(ProtocolError, match=r"critical section id 0 is not in \[0, 0\)"):
        w.handle(cmd(4, "send", 0))


@pytest.mark.parametrize("produced, consumed", [
    ([(START, 1, [5]), (13, 1, [5])], []),  # two produced
    ([(START, 1, [5])], [9]),               # a consumed desc
])
def test_wait_and_send_ids_refuses_a_task_of_the_wrong_shape(produced, consumed):
    with pytest.raises(ProtocolError, match=r"\(wait_and_send_ids\): needs one produced regst "
                                            "desc and no consumed ones"):
        actor(4, "wait_and_send_ids", produced=produced, consumed=consumed,
              producer_of={9: 1}, num_critical_sections=2)


def test_the_lock_refuses_wrong_descs_and_two_outputs():
    with pytest.raises(ProtocolError, match=r"\(reentrant_lock\): attrs start_desc/end_desc "
                                            "must name its consumed regst descs"):
        _lock(start_desc=99)
    with pytest.raises(ProtocolError, match=r"\(reentrant_lock\): needs one produced regst"):
        actor(5, "reentrant_lock", produced=[(OUT, 2, [6]), (13, 1, [6])],
              consumed=[START, END], producer_of={START: 4, END: 7}, start_desc=START,
              end_desc=END)


def test_the_lock_counts_its_acts_and_takes_no_ready_for_a_desc_it_does_not_consume():
    lock = _lock()
    _drain(lock, lock.handle(_id(4, 5, START, 0, 0, 0, 0)))
    assert lock.acts == 1 and lock.blocked_on()["running"] == {0: 1}
    with pytest.raises(ProtocolError, match=r"READY for regst desc 77, which it does not "
                                            "consume"):
        lock.handle(_id(4, 5, 77, 0, 0, 0, 0))


def test_the_lock_sends_eord_only_after_its_admit_act_is_done_and_every_id_came_back():
    lock = _lock()
    (admit,) = acts_of(lock.handle(_id(4, 5, START, 0, 0, 0, 0)))
    assert lock.handle(eord(4, 5, START, 1)) == []  # the admit act is still in flight
    assert all(m.type != EORD for m in _drain(lock, lock.act_done(admit)))  # no EORD yet
    assert lock.status != ZOMBIE  # id 0 is still running
    msgs = _drain(lock, lock.handle(_id(7, 5, END, 0, 0, 0, 0)))  # id 0 comes back
    assert [m.type for m in msgs].count(EORD) == 1 and lock.status == ZOMBIE  # now EORD
    lock.handle(ack(6, 5, OUT, 0))
    assert lock.status == ZOMBIE  # the back edge has not ended
    assert norm(lock.handle(eord(7, 5, END, 1))) == [("EXIT", 5)]


def test_the_lock_does_not_exit_while_the_back_edge_has_a_queued_return():
    lock = _lock(conflicts={})
    for p in range(2):
        _drain(lock, lock.handle(_id(4, 5, START, p, p, p, 0)))
    lock.handle(eord(4, 5, START, 2))
    for s in (0, 1):
        lock.handle(ack(6, 5, OUT, s))
    # one id comes back: the other still runs, so no EORD, no exit
    _drain(lock, lock.handle(_id(7, 5, END, 0, 0, 0, 0)))
    assert lock.status not in (ZOMBIE, EXITED)
    _drain(lock, lock.handle(_id(7, 5, END, 1, 1, 1, 0)))
    assert lock.status == ZOMBIE
    assert norm(lock.handle(eord(7, 5, END, 2))) == [("EXIT", 5)]


def _lock_of_one_regst():
    return actor(5, "reentrant_lock", produced=[(OUT, 1, [6])], consumed=[START, END],
                 producer_of={START: 4, END: 7}, start_desc=START, end_desc=END, conflicts={})


def _admit_two_with_one_regst(lock):
    """Ids 0 and 1 (section 0) sent, then START's EORD: id 0 admitted (its act done), id 1
    waiting for the one output regst, which case still reads."""
    (admit,) = acts_of(lock.handle(_id(4, 5, START, 0, 0, 0, 0)))
    assert norm(lock.act_done(admit)) == [("READY", 5, 6, OUT, 0, 0, 0), ("ACK", 5, 4, START, 0, 0)]
    assert lock.handle(_id(4, 5, START, 1, 1, 1, 0)) == []  # no free output regst
    assert lock.handle(eord(4, 5, START, 2)) == []
    assert lock.blocked_on()["waiting"] == [0]  # id 1's section; START's EORD adds none


def test_a_return_before_case_s_ack_leaves_the_waiting_id_waiting_not_ended():
    """Case's ACK and the id's return come over different pairs, in either order: with every
    admitted id back but one still waiting, the lock must not end its output."""
    lock = _lock_of_one_regst()
    _admit_two_with_one_regst(lock)
    (ret,) = acts_of(lock.handle(_id(7, 5, END, 0, 0, 0, 0)))
    assert norm(lock.act_done(ret)) == [("ACK", 5, 7, END, 0, 0)]  # no EORD: id 1 waits
    assert lock.status not in (ZOMBIE, EXITED) and lock.blocked_on()["waiting"] == [0]
    out = lock.handle(ack(6, 5, OUT, 0))  # case done with the regst: id 1 is admitted
    assert norm(out) == [("ACT", 5, 1, [(START, 1)], [(OUT, 0)])]


def test_the_lock_s_eord_waits_for_the_last_return_act_to_finish():
    lock = _lock()
    (admit,) = acts_of(lock.handle(_id(4, 5, START, 0, 0, 0, 0)))
    lock.act_done(admit)
    assert lock.handle(eord(4, 5, START, 1)) == []
    out = lock.handle(_id(7, 5, END, 0, 0, 0, 0))  # the last id comes back
    assert norm(out) == [("ACT", 5, 0, [(END, 0)], [])]  # its return act: no EORD yet
    assert norm(lock.act_done(acts_of(out)[0])) == [("ACK", 5, 7, END, 0, 0),
                                                    ("EORD", 5, 6, OUT, -1, -1, 1)]
    assert lock.status == ZOMBIE


def test_the_lock_exits_only_when_case_gave_back_its_last_regst():
    """The back edge's EORD may overtake case's last ACK (different pairs)."""
    lock = _lock()
    (admit,) = acts_of(lock.handle(_id(4, 5, START, 0, 0, 0, 0)))
    lock.act_done(admit)
    lock.handle(eord(4, 5, START, 1))
    _drain(lock, lock.handle(_id(7, 5, END, 0, 0, 0, 0)))
    assert lock.status == ZOMBIE
    assert lock.handle(eord(7, 5, END, 1)) == []  # case still holds regst 0
    assert lock.status == ZOMBIE
    assert norm(lock.handle(ack(6, 5, OUT, 0))) == [("EXIT", 5)]


def test_case_refuses_wrong_shapes_and_ids_past_its_sections():
    with pytest.raises(ProtocolError, match=r"\(case\): needs one consumed regst desc"):
        actor(6, "case", produced=[(20, 1, [8])], consumed=[OUT, 13],
              producer_of={OUT: 5, 13: 5}, cs_descs=[20])
    with pytest.raises(ProtocolError, match=r"\(case\): attrs cs_descs \[20, 99\] must list "
                                            r"its produced regst descs \[20, 21\]"):
        actor(6, "case", produced=[(20, 1, [8]), (21, 1, [9])], consumed=[OUT],
              producer_of={OUT: 5}, cs_descs=[20, 99])
    case = actor(6, "case", produced=[(20, 1, [8]), (21, 1, [9])], consumed=[OUT],
                 producer_of={OUT: 5}, cs_descs=[20, 21])
    assert len(acts_of(case.handle(_id(5, 6, OUT, 0, 0, 0, 1)))) == 1  # the last section
    with pytest.raises(ProtocolError, match=r"\(case\): critical section id 2 is not in "
                                            r"\[0, 2\)"):
        case.handle(_id(5, 6, OUT, 1, 1, 1, 2))


def test_esac_refuses_wrong_maps_and_outputs_and_unequal_machines():
    with pytest.raises(ProtocolError, match=r"\(esac\): attrs cs_of_desc must map each "
                                            r"consumed regst desc \[30, 31\]"):
        actor(7, "esac", produced=[(END, 1, [5])], consumed=[30, 31],
              producer_of={30: 8, 31: 9}, cs_of_desc={"30": 0})
    with pytest.raises(ProtocolError, match=r"and it produces one regst desc"):
        actor(7, "esac", produced=[(END, 1, [5]), (14, 1, [5])], consumed=[30],
              producer_of={30: 8}, cs_of_desc={"30": 0})
    esac = actor(7, "esac", produced=[(END, 2, [5])], consumed=[30, 31],
                 producer_of={30: 8, 31: 9}, cs_of_desc={"30": 0, "31": 0})
    esac.handle(ready(8, 7, 30, 0, 0, 0))  # machine A finished a piece, machine B did not
    esac.handle(eord(9, 7, 31, 0))
    with pytest.raises(ProtocolError, match=r"\(esac\): every sink tick ended but regsts are "
                                            r"left on descs \{30: 1\}"):
        esac.handle(eord(8, 7, 30, 1))


def test_a_generator_reads_the_tick_slot_it_was_given_and_acks_it():
    """A tick READY names slot 1 of piece 0: the act reads slot 1, the ACK returns slot 1."""
    s = actor(0, "source", produced=[(20, 2, [3])], consumed=[10], producer_of={10: 1},
              gated=True)
    (act,) = acts_of(s.handle(ready(1, 0, 10, 1, 0, 0)))
    assert act.reads == [(10, 1)]
    assert ("ACK", 0, 1, 10, 1, 0) in norm(s.act_done(act))
