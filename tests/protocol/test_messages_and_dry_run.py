"""Message records (``protocol.messages``) field by field, and the dry run's own counts
(``protocol.simulate``): what a simulation reports besides who exited."""

from __future__ import annotations

import pytest

import actorflow as af
from actorflow.errors import ProtocolError
from actorflow.protocol.messages import (
    ACK,
    CLIENT,
    CMD,
    CMD_CODES,
    CMD_NAMES,
    EORD,
    NONE,
    READY,
    Msg,
    cmd,
)
from actorflow.protocol.simulate import simulate


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
    past = len(CMD_NAMES)  # the first code past the known ones, and one below them
    assert Msg(CMD, CLIENT, 4, cmd=past).cmd_name == f"#{past}"
    assert Msg(CMD, CLIENT, 4, cmd=-1).cmd_name == "#-1"


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
