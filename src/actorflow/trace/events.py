"""Trace events: small records, plain data.

Recorders (``recorder.py``) never build these on the hot path: full tracing packs each
event's integers as int64 words (``packed.py``) and the flight recorder keeps the
runtime's own ``Msg`` objects.  Both become plain *rows* when they are read back (a trace
file decoded, a flight ring dumped), and readers turn rows into the frozen records below.

Row layouts (``t`` is ``time.perf_counter_ns()`` of the recording process; -1 in a flight
dump, whose ring keeps order, not time):

    SEND / RECV   [code, t, type, src, dst, desc, slot, piece, seq, msg_id, cmd, payload]
    ACT_BEGIN     [code, t, task, act_id, piece, [[desc, slot], ...] reads, ... writes]
    ACT_END       [code, t, task, act_id, piece]
    ACT_DEVICE    [code, t, task, act_id, piece, launch_ns, device_ns]  (device streams:
                  host time launching the act, device time between its events; just
                  before its ACT_END)

Message types are the protocol's own (``protocol.messages``: READY, ACK, EORD, CMD).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from actorflow.protocol.messages import (
    ACK,
    CMD,
    CMD_CODES,
    EORD,
    MSG_TYPE_NAMES,
    NONE,
    READY,
    Msg,
)

SEND, RECV, ACT_BEGIN, ACT_END, ACT_DEVICE = 0, 1, 2, 3, 4
EVENT_NAMES = ("SEND", "RECV", "ACT_BEGIN", "ACT_END", "ACT_DEVICE")

__all__ = ["ACK", "ACT_BEGIN", "ACT_DEVICE", "ACT_END", "CMD", "EORD", "EVENT_NAMES",
           "MSG_TYPE_NAMES", "READY", "RECV", "SEND", "ActEvent", "Event", "MsgEvent",
           "from_row", "message_row", "plain_payload"]


def plain_payload(v: Any) -> Any:
    """Payloads are recorded only when msgpack can write them (ints, strings, None)."""
    return v if v is None or isinstance(v, (int, float, str, bool)) else repr(v)[:64]


def message_row(code: int, t: int, m: Msg) -> tuple:
    """A SEND/RECV of message ``m`` as a plain row (see the module docstring); msgpack
    writes tuples as arrays, so no list is built.  A command keeps its name and argument."""
    if m.type == CMD:
        return (code, t, m.type, m.src, m.dst, m.regst_desc_id, m.slot, m.piece_id, m.seq,
                m.msg_id, m.cmd_name, m.arg)
    return (code, t, m.type, m.src, m.dst, m.regst_desc_id, m.slot, m.piece_id, m.seq,
            m.msg_id, "", None)


@dataclass(frozen=True, slots=True)
class MsgEvent:
    """A message sent or received by unit ``(machine, thrd)`` at ``t`` (ns, merged clock)."""

    kind: int  # SEND or RECV
    t: int
    machine: int
    thrd: int
    type: int
    src: int
    dst: int
    desc: int
    slot: int
    piece: int
    seq: int
    msg_id: int
    cmd: str = ""
    payload: Any = None

    @property
    def type_name(self) -> str:
        return MSG_TYPE_NAMES[self.type]

    @property
    def task(self) -> int:
        """The actor this event belongs to: the sender of a SEND, the receiver of a RECV."""
        return self.src if self.kind == SEND else self.dst

    def header(self) -> list:
        """The message as ``Msg.header()`` lays it out (for replay): the command's name
        back to its code, its argument to ``aux``."""
        arg = self.payload if type(self.payload) is int else NONE
        return [self.type, self.src, self.dst, self.desc, self.slot, self.piece, self.seq,
                self.msg_id, CMD_CODES.get(self.cmd, 0), arg]

    def describe(self) -> str:
        what = f"{EVENT_NAMES[self.kind]} {self.type_name} {self.src}->{self.dst}"
        if self.type == CMD:
            return f"{what} cmd={self.cmd} payload={self.payload}"
        return f"{what} desc={self.desc} slot={self.slot} piece={self.piece} seq={self.seq}"


@dataclass(frozen=True, slots=True)
class ActEvent:
    """An act of ``task`` began (ACT_BEGIN, with its regst slots), ended (ACT_END), or
    reported its host launch and device times (ACT_DEVICE, device streams)."""

    kind: int  # ACT_BEGIN, ACT_END or ACT_DEVICE
    t: int
    machine: int
    thrd: int
    task: int
    act_id: int
    piece: int
    reads: tuple[tuple[int, int], ...] = ()
    writes: tuple[tuple[int, int], ...] = ()
    launch_ns: int = -1
    device_ns: int = -1

    def describe(self) -> str:
        if self.kind == ACT_DEVICE:
            return (f"ACT_DEVICE task {self.task} act {self.act_id} piece {self.piece} "
                    f"launch {self.launch_ns / 1e3:.1f} us device {self.device_ns / 1e3:.1f} us")
        if self.kind == ACT_END:
            return f"ACT_END task {self.task} act {self.act_id} piece {self.piece}"
        return (f"ACT_BEGIN task {self.task} act {self.act_id} piece {self.piece} "
                f"reads={list(self.reads)} writes={list(self.writes)}")


Event = MsgEvent | ActEvent


def from_row(row: list, machine: int, thrd: int, shift_ns: int = 0) -> Event:
    """A plain row -> a record; ``shift_ns`` moves ``t`` onto the merged timeline."""
    code, t = row[0], row[1] + shift_ns
    if code <= RECV:
        return MsgEvent(code, t, machine, thrd, *row[2:12])
    if code == ACT_BEGIN:
        return ActEvent(code, t, machine, thrd, row[2], row[3], row[4],
                        tuple((int(d), int(s)) for d, s in row[5]),
                        tuple((int(d), int(s)) for d, s in row[6]))
    if code == ACT_DEVICE:
        return ActEvent(code, t, machine, thrd, row[2], row[3], row[4],
                        launch_ns=int(row[5]), device_ns=int(row[6]))
    return ActEvent(code, t, machine, thrd, row[2], row[3], row[4])
