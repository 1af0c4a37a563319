"""Actor messages and the actions the pure state machine returns.

Kept tiny and slot-based: one ``Msg`` is built for every READY/ACK on the hot path.
"""

from __future__ import annotations

from typing import Any

READY, ACK, EORD, CMD = 0, 1, 2, 3
MSG_TYPE_NAMES = ("READY", "ACK", "EORD", "CMD")
CLIENT = -1  # src of messages sent by the client (Session / launcher)


class Msg:
    """One actor message.  ``seq`` counts per (regst desc, destination) for FIFO checks."""

    __slots__ = ("cmd", "dst", "msg_id", "payload", "piece_id", "regst_desc_id", "seq", "slot",
                 "src", "type")

    def __init__(
        self, type: int, src: int, dst: int, regst_desc_id: int = -1, slot: int = -1,
        piece_id: int = -1, seq: int = 0, msg_id: int = 0, cmd: str = "",
        payload: Any = None,
    ) -> None:
        self.type = type
        self.src = src
        self.dst = dst
        self.regst_desc_id = regst_desc_id
        self.slot = slot
        self.piece_id = piece_id
        self.seq = seq
        self.msg_id = msg_id
        self.cmd = cmd
        self.payload = payload

    @property
    def type_name(self) -> str:
        return MSG_TYPE_NAMES[self.type]

    def header(self) -> list:
        """Plain list form (msgpack / trace / replay); payload must be msgpack-able."""
        return [self.type, self.src, self.dst, self.regst_desc_id, self.slot, self.piece_id,
                self.seq, self.msg_id, self.cmd, self.payload]

    @classmethod
    def from_header(cls, h: list) -> Msg:
        return cls(*h)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Msg) and self.header() == other.header()

    def __hash__(self) -> int:
        return hash(tuple(self.header()[:8]))

    def __repr__(self) -> str:
        extra = f" cmd={self.cmd}" if self.type == CMD else ""
        return (f"Msg({self.type_name} {self.src}->{self.dst} desc={self.regst_desc_id} "
                f"slot={self.slot} piece={self.piece_id} seq={self.seq}{extra})")


def cmd(dst: int, name: str, payload: Any = None) -> Msg:
    return Msg(CMD, CLIENT, dst, cmd=name, payload=payload)


class Act:
    """Run one act: read ``reads`` slots, write ``writes`` slots.  ``info`` is kind-specific."""

    __slots__ = ("act_id", "info", "piece_id", "reads", "task_id", "writes")

    def __init__(self, task_id: int, act_id: int, piece_id: int,
                 reads: list[tuple[int, int]], writes: list[tuple[int, int]],
                 info: Any = None) -> None:
        self.task_id = task_id
        self.act_id = act_id
        self.piece_id = piece_id
        self.reads = reads
        self.writes = writes
        self.info = info

    def __repr__(self) -> str:
        return (f"Act(task={self.task_id} #{self.act_id} piece={self.piece_id} "
                f"reads={self.reads} writes={self.writes} info={self.info})")


class Exit:
    """The actor has finished: every produced regst acked, EORD sent downstream."""

    __slots__ = ("task_id",)

    def __init__(self, task_id: int) -> None:
        self.task_id = task_id

    def __repr__(self) -> str:
        return f"Exit(task={self.task_id})"
