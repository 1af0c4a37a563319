"""A record read from a ring is checked before a state machine sees it (``ring_check.h``):
what a peer unit process may send through its ring, and why anything else is refused."""

from __future__ import annotations

import re
import struct

import pytest

_rings = pytest.importorskip("actorflow._core._rings", reason="compiled core not built")

RECORD = struct.Struct("=7qiBBH")  # record.h: src dst desc piece seq msg_id aux, slot, type,
READY, ACK, EORD, CMD = 0, 1, 2, 3  # cmd, flags

# machine: task 10 on unit 0 produces desc 100 (register_num 2) for task 20 on unit 1 (us)
# and task 30 on unit 2; task 20 produces desc 200 (register_num 3) for task 30
UNITS = {10: 0, 20: 1, 30: 2}
DESCS = [(100, 10, 2, [20, 30]), (200, 20, 3, [30])]


@pytest.fixture
def check():
    return _rings.RingCheck(UNITS, DESCS, me=1, writers=[0, 2])  # ring 0: unit 0, ring 1: unit 2


def rec(t, src, dst, desc, slot=0, piece=0, seq=0, mid=1, cmd=0, aux=-1, flags=0) -> bytes:
    return RECORD.pack(src, dst, desc, piece, seq, mid, aux, slot, t, cmd, flags)


def test_what_a_peer_unit_may_send_passes(check):
    assert check.problem(rec(READY, 10, 20, 100, slot=1), 0) is None
    assert check.problem(rec(EORD, 10, 20, 100, slot=-1), 0) is None
    assert check.problem(rec(ACK, 30, 20, 200, slot=2), 1) is None  # unit 2 acks our desc


@pytest.mark.parametrize(("record", "ring", "why"), [
    (rec(READY, 10, 20, 100), 1, "ring of unit 2 claims sender task 10, which that unit "
                                 "does not host"),
    (rec(READY, 99, 20, 100), 0, "claims sender task 99"),
    (rec(READY, 10, 30, 100), 0, "destination task 30 is not hosted here"),
    (rec(CMD, -1, 20, -1, cmd=1), 0, r"a command from unit 0 \(commands come from the node\)"),
    (rec(7, 10, 20, 100), 0, "message type 7"),
    (rec(READY, 10, 20, 100, cmd=2), 0, "a READY with command code 2"),
    (rec(ACK, 30, 20, 200, flags=4), 1, "an? ACK with command code 0 and flags 4"),
    (rec(READY, 10, 20, 555), 0, "regst desc 555 is not in the plan"),
    (rec(READY, 30, 20, 200), 1, "regst desc 200 does not link task 30 to task 20"),
    (rec(ACK, 10, 20, 100), 0, "regst desc 100 does not link task 10 to task 20"),
    (rec(READY, 10, 20, 100, slot=2), 0, r"slot 2 outside \[0, 2\) of regst desc 100"),
    (rec(ACK, 30, 20, 200, slot=-1), 1, r"slot -1 outside \[0, 3\)"),
    (rec(READY, 10, 20, 100, seq=-3), 0, "negative seq -3"),
    (rec(READY, 10, 20, 100), 5, "ring 5 does not exist"),
], ids=lambda v: v if isinstance(v, str) and " " in v else None)
def test_anything_else_is_refused_saying_why(check, record, ring, why):
    got = check.problem(record, ring)
    assert got is not None and re.search(why, got), got


def test_a_record_is_64_bytes(check):
    with pytest.raises(Exception, match="a record is 64 bytes, got 63"):
        check.problem(bytes(63), 0)
