"""Actor kinds (source, input, output, tick, acc, repeat) as pure state machines."""

from __future__ import annotations

import pytest

from actorflow.errors import ProtocolError, RegistryError
from actorflow.protocol.kinds import kind_names, make_state
from actorflow.protocol.messages import cmd
from actorflow.protocol.state import EXITED, ZOMBIE
from tests.protocol.by_hand import ack, actor, acts_of, eord, make_task, norm, ready


def test_every_task_type_has_a_kind_and_unknown_types_list_them():
    for name in ("normal", "input", "source", "output", "tick", "acc", "repeat", "comm_net",
                 "boxing", "copy_h2d", "copy_d2h"):
        assert name in kind_names()
    with pytest.raises(RegistryError,
                       match=r"task 0 \(task0\): unknown task type 'warp'; known: acc, boxing"):
        make_state(make_task(0, "warp"), {})


# -- source ------------------------------------------------------------------------------------

def test_source_makes_its_piece_count_then_eord_after_the_last_ready():
    s = actor(0, "source", produced=[(20, 2, [3])], piece_num=3)
    acts = acts_of(s.handle(cmd(0, "start")))
    assert [(a.piece_id, a.writes) for a in acts] == [(0, [(20, 0)]), (1, [(20, 1)])]
    assert norm(s.act_done(acts[0])) == [("READY", 0, 3, 20, 0, 0, 0)]
    assert norm(s.act_done(acts[1])) == [("READY", 0, 3, 20, 1, 1, 1)]
    (a2,) = acts_of(s.handle(ack(3, 0, 20, 0)))
    assert a2.piece_id == 2
    assert norm(s.act_done(a2)) == [("READY", 0, 3, 20, 0, 2, 2), ("EORD", 0, 3, 20, -1, -1, 3)]
    assert s.status == ZOMBIE
    assert s.handle(ack(3, 0, 20, 1)) == []
    assert norm(s.handle(ack(3, 0, 20, 0))) == [("EXIT", 0)]


def test_source_start_payload_overrides_piece_num():
    s = actor(0, "source", produced=[(20, 4, [3])], piece_num=9)
    assert [a.piece_id for a in acts_of(s.handle(cmd(0, "start", 2)))] == [0, 1]


def test_source_without_count_runs_until_stop():
    s = actor(0, "source", produced=[(20, 1, [3])])
    (a0,) = acts_of(s.handle(cmd(0, "start", None)))
    s.act_done(a0)
    (a1,) = acts_of(s.handle(ack(3, 0, 20, 0)))  # unbounded: acts whenever a regst is free
    assert s.handle(cmd(0, "stop")) == []  # act 1 still in flight
    assert norm(s.act_done(a1)) == [("READY", 0, 3, 20, 0, 1, 1), ("EORD", 0, 3, 20, -1, -1, 2)]
    assert norm(s.handle(ack(3, 0, 20, 0))) == [("EXIT", 0)]
    assert s.pieces_made == 2


def test_source_with_a_tick_input_acts_once_per_tick():
    s = actor(0, "source", produced=[(20, 4, [3])], consumed=[10], producer_of={10: 1},
              piece_num=5)
    assert s.handle(cmd(0, "start")) == []
    assert norm(s.handle(ready(1, 0, 10, 0, 0, 0))) == [("ACT", 0, 0, [(10, 0)], [(20, 0)])]


# -- input -------------------------------------------------------------------------------------

def test_input_feed_close():
    i = actor(0, "input", produced=[(20, 2, [3])])
    first = acts_of(i.handle(cmd(0, "feed")))
    assert i.inflight == [0]
    acts = acts_of(i.handle(cmd(0, "feed", 2)))  # 2 more fed, only one free regst left
    assert [a.piece_id for a in acts] == [1]
    assert i.inflight == [0, 1]
    assert i.handle(cmd(0, "close")) == []  # piece 2 not made yet: no EORD
    for a in first + acts:
        i.act_done(a)
    (a2,) = acts_of(i.handle(ack(3, 0, 20, 0)))
    assert norm(i.act_done(a2)) == [("READY", 0, 3, 20, 0, 2, 2), ("EORD", 0, 3, 20, -1, -1, 3)]
    with pytest.raises(ProtocolError, match="fed after close"):
        i.handle(cmd(0, "feed"))


def test_input_closed_with_nothing_fed_exits():
    i = actor(0, "input", produced=[(20, 2, [3])])
    assert norm(i.handle(cmd(0, "close"))) == [("EORD", 0, 3, 20, -1, -1, 0), ("EXIT", 0)]


# -- output and tick ---------------------------------------------------------------------------

def test_output_acts_per_piece_acks_and_exits_on_eord():
    o = actor(3, "output", consumed=[20], producer_of={20: 2})
    (a,) = acts_of(o.handle(ready(2, 3, 20, 1, 0, 0)))
    assert a.reads == [(20, 1)] and a.writes == []
    assert norm(o.act_done(a)) == [("ACK", 3, 2, 20, 1, 0)]
    assert norm(o.handle(eord(2, 3, 20, 1))) == [("EXIT", 3)]


def test_tick_follows_the_same_rules_without_kernels():
    t = actor(4, "tick", produced=[(30, 1, [5])], consumed=[20], producer_of={20: 2})
    (a,) = acts_of(t.handle(ready(2, 4, 20, 0, 0, 0)))
    assert norm(t.act_done(a)) == [("READY", 4, 5, 30, 0, 0, 0), ("ACK", 4, 2, 20, 0, 0)]
    assert norm(t.handle(eord(2, 4, 20, 1))) == [("EORD", 4, 5, 30, -1, -1, 1)]
    assert norm(t.handle(ack(5, 4, 30, 0))) == [("EXIT", 4)]


# -- acc (N -> 1) ------------------------------------------------------------------------------

def test_acc_emits_one_piece_per_group_and_flushes_the_partial_group_at_eord():
    a = actor(2, "acc", produced=[(20, 1, [3])], consumed=[10], producer_of={10: 1},
              acc_num=3)
    infos, sent = [], []
    for piece in range(7):
        acts = acts_of(a.handle(ready(1, 2, 10, piece % 4, piece, piece)))
        if piece == 3:  # group 1 needs the output regst that task 3 still reads
            assert acts == []
            acts = acts_of(a.handle(ack(3, 2, 20, 0)))
        if piece == 6:
            assert acts == []
            acts = acts_of(a.handle(ack(3, 2, 20, 0)))
        (act,) = acts
        infos.append(act.info)
        out = norm(a.act_done(act))
        # every input regst is acked right after its act, even mid-group
        assert out[-1] == ("ACK", 2, 1, 10, piece % 4, piece)  # the ACK names the input piece
        sent += [m for m in out if m[0] == "READY"]
    assert [i[:2] for i in infos] == [(True, False), (False, False), (False, True)] * 2 + [
        (True, False)]
    assert sent == [("READY", 2, 3, 20, 0, 0, 0), ("READY", 2, 3, 20, 0, 1, 1)]
    # EORD with one piece accumulated: a flush act (no input) emits group 2 first
    (flush,) = acts_of(a.handle(eord(1, 2, 10, 7)))
    assert flush.reads == [] and flush.writes == [(20, 0)] and flush.info[:2] == (False, True)
    assert norm(a.act_done(flush)) == [("READY", 2, 3, 20, 0, 2, 2),
                                       ("EORD", 2, 3, 20, -1, -1, 3)]
    assert norm(a.handle(ack(3, 2, 20, 0))) == [("EXIT", 2)]


def test_acc_with_a_full_last_group_sends_no_flush():
    a = actor(2, "acc", produced=[(20, 1, [3])], consumed=[10], producer_of={10: 1},
              acc_num=2)
    for piece in range(2):
        for act in acts_of(a.handle(ready(1, 2, 10, piece, piece, piece))):
            a.act_done(act)
    assert norm(a.handle(eord(1, 2, 10, 2))) == [("EORD", 2, 3, 20, -1, -1, 1)]


def test_acc_needs_one_input_and_one_output():
    with pytest.raises(ProtocolError, match=r"task 2 \(acc\): needs acc_num >= 1"):
        actor(2, "acc", produced=[(20, 1, [3])], consumed=[10, 11],
              producer_of={10: 1, 11: 1}, acc_num=2)


# -- repeat (1 -> N) ---------------------------------------------------------------------------

def test_repeat_uses_each_input_n_times_and_acks_after_the_last_use():
    r = actor(2, "repeat", produced=[(20, 3, [3])], consumed=[10], producer_of={10: 1},
              repeat_num=3)
    acts = acts_of(r.handle(ready(1, 2, 10, 1, 0, 0)))
    assert [(a.piece_id, a.reads, a.writes) for a in acts] == [
        (0, [(10, 1)], [(20, 0)]), (1, [(10, 1)], [(20, 1)]), (2, [(10, 1)], [(20, 2)])]
    assert norm(r.act_done(acts[0])) == [("READY", 2, 3, 20, 0, 0, 0)]
    assert norm(r.act_done(acts[1])) == [("READY", 2, 3, 20, 1, 1, 1)]
    assert norm(r.act_done(acts[2])) == [("READY", 2, 3, 20, 2, 2, 2), ("ACK", 2, 1, 10, 1, 0)]
    assert norm(r.handle(eord(1, 2, 10, 1))) == [("EORD", 2, 3, 20, -1, -1, 3)]
    for slot in range(3):
        out = norm(r.handle(ack(3, 2, 20, slot)))
    assert out == [("EXIT", 2)] and r.status == EXITED


def test_repeat_with_a_small_register_num_waits_between_uses():
    r = actor(2, "repeat", produced=[(20, 1, [3])], consumed=[10], producer_of={10: 1},
              repeat_num=2)
    (a0,) = acts_of(r.handle(ready(1, 2, 10, 0, 0, 0)))
    assert norm(r.act_done(a0)) == [("READY", 2, 3, 20, 0, 0, 0)]  # no ACK yet: 1 use left
    (a1,) = acts_of(r.handle(ack(3, 2, 20, 0)))
    assert a1.reads == [(10, 0)] and a1.piece_id == 1
    assert norm(r.act_done(a1))[-1] == ("ACK", 2, 1, 10, 0, 0)  # names input piece 0
