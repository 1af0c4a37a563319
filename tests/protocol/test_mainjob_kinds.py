"""The main job's kinds (wait_and_send_ids, reentrant_lock, case, esac) with no threads.

Critical sections (cs) in these tests: 0 writes variable w, 1 and 2 only read it, 3 touches
nothing.  Writers conflict with every job touching the variable (themselves included);
readers overlap.
"""

from __future__ import annotations

import pytest

from actorflow.errors import ProtocolError
from actorflow.protocol.messages import READY, Msg, cmd
from actorflow.protocol.simulate import simulate
from actorflow.protocol.state import EXITED, ZOMBIE
from tests.protocol.by_hand import ack, actor, acts_of, eord, make_task, norm

CONFLICTS = {"0": [0, 1, 2], "1": [0], "2": [0], "3": []}
START, END, OUT = 10, 11, 12  # lock's consumed start/end, produced out


def id_msg(src: int, dst: int, desc: int, slot: int, piece: int, seq: int, cs: int) -> Msg:
    return Msg(READY, src, dst, desc, slot, piece, seq, aux=cs)


def make_lock(register_num: int = 4):
    return actor(5, "reentrant_lock", produced=[(OUT, register_num, [6])],
                 consumed=[START, END], producer_of={START: 4, END: 7},
                 start_desc=START, end_desc=END, conflicts=CONFLICTS)


def admitted(actions) -> list[int]:
    """cs ids the lock sends on (READY aux) after running its acts to completion."""
    return [a.info[1] for a in acts_of(actions) if a.info[0] == "admit"]


def run_acts(state, actions) -> list:
    """Complete every act at once, returning every message sent (in order)."""
    msgs = [a for a in actions if type(a) is Msg]
    todo = acts_of(actions)
    while todo:
        more = state.act_done(todo.pop(0))
        msgs += [a for a in more if type(a) is Msg]
        todo += acts_of(more)
    return msgs


def test_wait_and_send_ids_sends_ids_in_order_with_their_payload():
    w = actor(4, "wait_and_send_ids", produced=[(START, 2, [5])], num_critical_sections=4)
    msgs = []
    for i in (3, 1, 0):
        msgs += run_acts(w, w.handle(cmd(4, "send", i)))
    assert [(m.piece_id, m.aux) for m in msgs] == [(0, 3), (1, 1)]  # 2 regsts: 2 in flight
    msgs = run_acts(w, w.handle(ack(5, 4, START, 0)))
    assert [(m.piece_id, m.aux) for m in msgs] == [(2, 0)]
    with pytest.raises(ProtocolError, match=r"critical section id 9 is not in \[0, 4\)"):
        w.handle(cmd(4, "send", 9))


def test_lock_admits_readers_together_and_holds_a_writer_back():
    lk = make_lock()
    out = lk.handle(id_msg(4, 5, START, 0, 0, 0, cs=1))
    out += lk.handle(id_msg(4, 5, START, 1, 1, 1, cs=2))
    assert admitted(out) == [1, 2]  # two readers overlap
    assert lk.blocked_on()["running"] == {1: 1, 2: 1}
    assert admitted(lk.handle(id_msg(4, 5, START, 2, 2, 2, cs=0))) == []  # writer waits
    assert lk.blocked_on()["waiting"] == [0]


def test_lock_queues_in_arrival_order_and_admits_after_esac_returns():
    lk = make_lock()
    for seq, cs in enumerate([1, 0, 2]):  # reader, writer, reader
        msgs = run_acts(lk, lk.handle(id_msg(4, 5, START, seq, seq, seq, cs=cs)))
    assert lk.blocked_on()["running"] == {1: 1}
    # the reader behind the waiting writer does not overtake it
    assert lk.blocked_on()["waiting"] == [0, 2]
    msgs = run_acts(lk, lk.handle(id_msg(7, 5, END, 0, 0, 0, cs=1)))  # reader 1 done
    readys = [m for m in msgs if m.type == READY]
    assert [m.aux for m in readys] == [0]  # the writer, and only it
    assert lk.blocked_on()["running"] == {0: 1}
    msgs = run_acts(lk, lk.handle(id_msg(7, 5, END, 1, 1, 1, cs=0)))  # writer done
    assert [m.aux for m in msgs if m.type == READY] == [2]
    # every start/end regst was acked back to its producer
    acks = [(m.dst, m.regst_desc_id) for m in msgs if m.type == 1]
    assert (7, END) in acks and (4, START) in acks


def test_writer_conflicts_with_itself_so_its_pieces_run_one_at_a_time():
    lk = make_lock()
    out = lk.handle(id_msg(4, 5, START, 0, 0, 0, cs=0))
    out += lk.handle(id_msg(4, 5, START, 1, 1, 1, cs=0))
    assert admitted(out) == [0]
    assert lk.blocked_on()["running"] == {0: 1} and lk.blocked_on()["waiting"] == [0]
    # a job touching nothing could run beside it, but not past the writer queued ahead
    assert admitted(lk.handle(id_msg(4, 5, START, 2, 2, 2, cs=3))) == []
    assert lk.blocked_on()["waiting"] == [0, 3]


def test_a_returned_id_that_is_not_running_is_a_protocol_error():
    lk = make_lock()
    with pytest.raises(ProtocolError, match="critical section 2 returned but it is not running"):
        lk.handle(id_msg(7, 5, END, 0, 0, 0, cs=2))


def test_lock_eord_waits_for_running_sections_then_for_the_back_edge():
    lk = make_lock()
    run_acts(lk, lk.handle(id_msg(4, 5, START, 0, 0, 0, cs=1)))
    assert lk.handle(eord(4, 5, START, 1)) == []  # cs 1 still running: no EORD yet
    msgs = run_acts(lk, lk.handle(id_msg(7, 5, END, 0, 0, 0, cs=1)))
    assert ("EORD", 5, 6, OUT, -1, -1, 1) in norm(msgs)
    assert lk.status == ZOMBIE
    assert lk.handle(ack(6, 5, OUT, 0)) == []  # out regst free, but the back edge is open
    assert norm(lk.handle(eord(7, 5, END, 1))) == [("EXIT", 5)]
    assert lk.status == EXITED


def test_case_routes_ids_and_numbers_pieces_per_critical_section():
    c = actor(6, "case", produced=[(20, 2, [8]), (21, 2, [9])], consumed=[OUT],
              producer_of={OUT: 5}, cs_descs=[20, 21])
    msgs = []
    for seq, cs in enumerate([1, 0, 1]):
        msgs += run_acts(c, c.handle(id_msg(5, 6, OUT, seq % 2, seq, seq, cs=cs)))
    readys = [(m.dst, m.regst_desc_id, m.piece_id) for m in msgs if m.type == READY]
    assert readys == [(9, 21, 0), (8, 20, 0), (9, 21, 1)]
    with pytest.raises(ProtocolError, match="critical section id 5"):
        c.handle(id_msg(5, 6, OUT, 0, 3, 3, cs=5))


def test_esac_returns_an_id_only_when_every_machine_of_that_section_is_done():
    e = actor(7, "esac", produced=[(END, 2, [5])], consumed=[30, 31, 40],
              producer_of={30: 13, 31: 14, 40: 15}, cs_of_desc={30: 0, 31: 0, 40: 1})
    assert run_acts(e, e.handle(Msg(READY, 13, 7, 30, 0, 0, 0))) == []  # machine 1 of cs 0 busy
    msgs = run_acts(e, e.handle(Msg(READY, 15, 7, 40, 0, 0, 0)))
    assert [m.aux for m in msgs if m.type == READY] == [1]
    msgs = run_acts(e, e.handle(Msg(READY, 14, 7, 31, 0, 0, 0)))
    assert [m.aux for m in msgs if m.type == READY] == [0]
    assert sorted((m.dst, m.regst_desc_id) for m in msgs if m.type == 1) == [(13, 30), (14, 31)]


def _main_job_plan(writes: bool):
    """wait -> lock -> case -> tick (one cs) -> callback + esac -> back to the lock."""
    tasks = [
        make_task(0, "wait_and_send_ids", produced=[(1, 2, [1])], num_critical_sections=1),
        make_task(1, "reentrant_lock", produced=[(2, 2, [2])], consumed=[1, 5],
                  start_desc=1, end_desc=5, conflicts={"0": [0] if writes else []}),
        make_task(2, "case", produced=[(3, 2, [3])], consumed=[2], cs_descs=[3]),
        make_task(3, "tick", produced=[(4, 2, [4, 5])], consumed=[3]),
        make_task(4, "esac", produced=[(5, 2, [1])], consumed=[4], cs_of_desc={4: 0}),
        make_task(5, "callback_tick", consumed=[4]),
    ]

    class P:
        pass

    p = P()
    p.tasks = tasks
    return p


@pytest.mark.parametrize("writes", [True, False])
def test_eord_goes_through_the_whole_main_job_and_every_actor_exits(writes):
    seen = []

    def on_act(state, act):
        if state.kind == "tick":
            seen.append(act.piece_id)
        if state.kind == "reentrant_lock":
            # a writer's section never runs twice at once
            assert not writes or state.running[0] <= 1

    res = simulate(_main_job_plan(writes), pieces=5, on_act=on_act)
    assert res.stuck == []
    assert seen == [0, 1, 2, 3, 4]


def test_random_interleavings_of_the_main_job_drain():
    import random

    for seed in range(20):
        rng = random.Random(seed)
        res = simulate(_main_job_plan(seed % 2 == 0), pieces=4, pick=rng.randrange)
        assert res.stuck == []
