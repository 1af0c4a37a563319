"""Message records (``protocol.messages``) field by field, and the dry run's own counts
(``protocol.simulate``): what a simulation reports besides who exited."""

from __future__ import annotations

import pytest

import actorflow as af
from actorflow.errors import PlanValidationError, ProtocolError
from actorflow.protocol.messages import (
    ACK,
    CLIENT,
    CMD,
    CMD_CODES,
    EORD,
    NONE,
    READY,
    Msg,
    cmd,
)
from actorflow.protocol.simulate import check_progress, simulate


def test_a_message_defaults_to_no_desc_slot_piece_or_argument():
    m = Msg(READY, 1, 2)
    assert m.header() == [READY, 1, 2, -1, -1, -1, 0, 0, 0, NONE]
    assert m.arg is None and m.type_name == "READY" and m.cmd_name == ""
    assert Msg.from_header(m.header()) == m


def test_messages_are_equal_by_all_ten_fields_and_never_equal_other_things():
    a = Msg(ACK, 1, 2, 10, 0, 5, 3, 77, 0, 9)
    assert a == Msg(*a.header()) and hash(a) == hash(Msg(*a.header()))
    for i in range(10):
        h = a.header()
        h[i] += 1
        assert Msg(*h) != a, f"field {i} is part of equality"
    assert a != a.header() and a != "Msg" and a != None  # noqa: E711
    assert len({a, Msg(*a.header())}) == 1


def test_a_command_comes_from_the_client_with_its_code_and_argument():
    c = cmd(4, "feed", 3)
    assert (c.type, c.src, c.dst, c.cmd, c.arg) == (CMD, CLIENT, 4, CMD_CODES["feed"], 3)
    assert CLIENT == -1  # no task has that id
    assert cmd(4, "close").arg is None and cmd(4, "close").aux == NONE
    assert repr(c) == "Msg(CMD feed 3 -1->4)" and repr(cmd(4, "stop")) == "Msg(CMD stop -1->4)"
    assert repr(Msg(EORD, 1, 2, 10, -1, -1, 4)) == "Msg(EORD 1->2 desc=10 slot=-1 piece=-1 seq=4)"
    assert repr(Msg(READY, 1, 2, 10, 0, 3, 1, aux=2)).endswith("seq=1 aux=2)")
    assert Msg(CMD, CLIENT, 4, cmd=99).cmd_name == "#99"


@pytest.mark.parametrize("name, arg, problem", [
    ("jump", None, r"unknown command 'jump' for task 4; known: \['close', 'feed', 'send', "
                   r"'start', 'stop'\]"),
    ("feed", -1, r"command 'feed' to task 4: argument -1 is not a non-negative integer"),
    ("feed", True, r"argument True is not"),
    ("start", 2.0, r"argument 2\.0 is not"),
])
def test_a_command_that_cannot_be_a_record_is_refused(name, arg, problem):
    with pytest.raises(ProtocolError, match=problem):
        cmd(4, name, arg)


def _chain(register_num: int = 2):
    b = af.PlanBuilder(register_num=register_num)
    b.output("y", b.op("relu", b.op("relu", b.input("x", (2,)))))
    return b.build()


def test_the_dry_run_counts_messages_and_keeps_acts_when_asked():
    plan = _chain()
    full = simulate(plan, pieces=3)
    assert not full.truncated and full.stuck == []
    # input -> relu -> relu -> output, 3 pieces: each edge carries 3 READY + 3 ACK + 1 EORD
    assert full.messages == 3 * 7
    assert len(full.acts) == 3 * 4  # every task acts once per piece
    seen = []
    lean = simulate(plan, pieces=3, keep_acts=False, on_act=lambda st, a: seen.append(a))
    assert lean.acts == [] and len(seen) == 12 and lean.messages == full.messages


def test_a_dry_run_cut_short_says_it_was_truncated():
    res = simulate(_chain(), pieces=3, max_steps=5)
    assert res.truncated and res.stuck


def _inputs(plan) -> list[int]:
    return [t.task_id for t in plan.tasks if t.task_type == "input"]


def _actors(res) -> set[int]:
    return {a.task_id for a in res.acts}


def test_max_steps_is_exactly_the_number_of_deliveries():
    """The feed command is the first delivery (the input acts on it), the close the second."""
    plan = _chain()
    (inp,) = _inputs(plan)
    none = simulate(plan, pieces=3, max_steps=0)
    assert none.truncated and none.acts == [] and none.messages == 0
    one = simulate(plan, pieces=3, max_steps=1)
    # register_num 2: the input writes two pieces and waits for a free regst
    assert one.truncated and _actors(one) == {inp} and len(one.acts) == 2 and one.messages == 2


def test_the_dry_run_delivers_the_oldest_queue_first_unless_pick_says_otherwise():
    plan = _chain()
    (inp,) = _inputs(plan)
    # after the feed, the client's close (queued first) is older than the input's READYs
    oldest = simulate(plan, pieces=3, max_steps=2)
    assert _actors(oldest) == {inp}
    newest = simulate(plan, pieces=3, max_steps=2, pick=lambda n: n - 1)
    assert inp in _actors(newest) and len(_actors(newest)) == 2  # the first relu read a READY


def test_pick_counts_queues_from_the_oldest():
    """Three inputs, three client queues: pick 1 is the second oldest, not the newest."""
    b = af.PlanBuilder(register_num=2)
    x, y, z = (b.input(n, (2,)) for n in "xyz")
    b.output("s", b.op("add", b.op("add", x, y), z))
    plan = b.build()
    inputs = _inputs(plan)
    assert len(inputs) == 3
    res = simulate(plan, pieces=1, max_steps=1, pick=lambda n: 1)
    assert _actors(res) == {inputs[1]}


def test_the_dry_run_budget_is_a_base_plus_a_share_per_task_and_edge():
    """400,000 deliveries and 100 more per task and per producer->consumer edge; a plan whose
    dry run would need more is refused naming the budget and the task that costs most."""
    b = af.PlanBuilder(register_num=2, name="big")
    b.output("y", b.acc(b.repeat(b.input("x", (2,), "float32"), 2), 2))
    plan = b.build()
    rep = next(t for t in plan.tasks if t.task_type == "repeat")
    rep.attrs["repeat_num"] = 100_000
    edges = sum(len(d.consumer_task_ids) for t in plan.tasks for d in t.produced.values())
    budget = 400_000 + 100 * (len(plan.tasks) + edges)
    # acts: input 2e5 (2 x repeat_num pieces), repeat 2e10, acc 1e10 + 1, output 1e10 + 1;
    # each act costs 1 delivery, each READY 2 per consumer (READY + ACK), each EORD 1 more
    with pytest.raises(PlanValidationError, match=r"would deliver about 130000800005 messages"):
        check_progress(plan)
    with pytest.raises(PlanValidationError, match=rf"over its budget of {budget} for a plan of "
                       rf"this size: task {rep.task_id} \({rep.label}\) alone acts up to "
                       rf"{2 * 100_000 * 100_000} times for {2 * 100_000} pieces"):
        check_progress(plan)


@pytest.mark.parametrize("kind, key", [("acc", "acc_num"), ("repeat", "repeat_num")])
def test_the_dry_run_alone_refuses_a_rate_of_zero_with_the_protocol_s_words(kind, key):
    """Plan.validate's rules refuse it first; the dry run on its own must too (no
    ZeroDivisionError from its cost estimate)."""
    b = af.PlanBuilder(register_num=2, name="zero")
    b.output("y", b.acc(b.repeat(b.input("x", (2,), "float32"), 2), 2))
    plan = b.build()
    t = next(t for t in plan.tasks if t.task_type == kind)
    t.attrs[key] = 0
    with pytest.raises(PlanValidationError, match=rf"dry run of 4 pieces broke the protocol: "
                       rf"task {t.task_id} \({kind}\): needs {key} >= 1"):
        check_progress(plan)


def test_the_dry_run_estimate_follows_the_busiest_input_of_each_task():
    """add reads the input (2,000 pieces) and the repeat (2,000,000 regsts): it acts up to
    2,000,000 times, and so does its output."""
    b = af.PlanBuilder(register_num=2, name="two rates")
    x = b.input("x", (2,), "float32")
    r = b.repeat(x, 1000)
    b.output("y", b.acc(r, 2))
    b.output("z", b.op("add", x, r))
    plan = b.build(validate=False)  # validate() would refuse it for exactly this
    assert sorted(t.task_type for t in plan.tasks) == [
        "acc", "input", "normal", "output", "output", "repeat"]
    # acts x (1 + per produced desc 2 x consumers + 1): input 2e3 x 6, repeat 2e6 x 6,
    # acc (1e6 + 1) x 4, add 2e6 x 4, output y 1e6 + 1, output z 2e6
    with pytest.raises(PlanValidationError, match=r"would deliver about 27012005 messages, over "
                       r"its budget of 401200 "):
        check_progress(plan)
