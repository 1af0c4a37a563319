"""Actor messages and the actions the pure state machine returns.

A message is a fixed record of ten integers, the same fields as the compiled core's 64-byte
``af_msg`` (``_core/record.h``): no string and no object rides in it, so it packs into a
record, a ring slot or a msgpack header without conversion.  A command's argument is an
integer in ``aux`` (a piece count, a critical-section id; ``NONE`` = no argument); a
main-job READY carries its critical-section id in ``aux`` too.  Commands that would carry
several values are several records (the multi-job client sends one ``send`` per id), so no
side table of payloads is needed.
"""

from __future__ import annotations

from typing import Any

from actorflow.errors import ProtocolError

READY, ACK, EORD, CMD = 0, 1, 2, 3
MSG_TYPE_NAMES = ("READY", "ACK", "EORD", "CMD")
CLIENT = -1  # src of messages sent by the client (Session / launcher)
NONE = -1  # aux of a message with no argument

# command codes (``Msg.cmd``), in the order of ``_core/record.h``'s AF_CMD_*
START, STOP, FEED, CLOSE, SEND = 1, 2, 3, 4, 5
CMD_NAMES = ("", "start", "stop", "feed", "close", "send")
CMD_CODES = {name: code for code, name in enumerate(CMD_NAMES) if name}


class Msg:
    """One actor message.  ``seq`` counts per (regst desc, destination) for FIFO checks."""

    __slots__ = ("aux", "cmd", "dst", "msg_id", "piece_id", "regst_desc_id", "seq", "slot",
                 "src", "type")

    def __init__(
        self, type: int, src: int, dst: int, regst_desc_id: int = -1, slot: int = -1,
        piece_id: int = -1, seq: int = 0, msg_id: int = 0, cmd: int = 0, aux: int = NONE,
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
        self.aux = aux

    @property
    def type_name(self) -> str:
        return MSG_TYPE_NAMES[self.type]

    @property
    def cmd_name(self) -> str:
        """The command's name (``start``, ``feed`` ...); empty for other messages."""
        return CMD_NAMES[self.cmd] if 0 <= self.cmd < len(CMD_NAMES) else f"#{self.cmd}"

    @property
    def arg(self) -> int | None:
        """The command's argument (None: none given)."""
        return None if self.aux == NONE else self.aux

    def header(self) -> list[int]:
        """The ten fields as a plain list (msgpack header, trace, replay, record)."""
        return [self.type, self.src, self.dst, self.regst_desc_id, self.slot, self.piece_id,
                self.seq, self.msg_id, self.cmd, self.aux]

    @classmethod
    def from_header(cls, h: list) -> Msg:
        return cls(*h)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Msg) and self.header() == other.header()

    def __hash__(self) -> int:
        return hash(tuple(self.header()))

    def __repr__(self) -> str:
        if self.type == CMD:
            arg = "" if self.aux == NONE else f" {self.aux}"
            return f"Msg(CMD {self.cmd_name}{arg} {self.src}->{self.dst})"
        aux = "" if self.aux == NONE else f" aux={self.aux}"
        return (f"Msg({self.type_name} {self.src}->{self.dst} desc={self.regst_desc_id} "
                f"slot={self.slot} piece={self.piece_id} seq={self.seq}{aux})")


def cmd(dst: int, name: str, arg: int | None = None) -> Msg:
    """A client command (``start``, ``stop``, ``feed``, ``close``, ``send``) to task ``dst``;
    ``arg`` is its integer argument (a piece count, a critical-section id) or None."""
    code = CMD_CODES.get(name)
    if code is None:
        raise ProtocolError(f"unknown command {name!r} for task {dst}; known: "
                            f"{sorted(CMD_CODES)}")
    if arg is not None and (not isinstance(arg, int) or isinstance(arg, bool) or arg < 0):
        raise ProtocolError(f"command '{name}' to task {dst}: argument {arg!r} is not a "
                            "non-negative integer")
    return Msg(CMD, CLIENT, dst, cmd=code, aux=NONE if arg is None else arg)


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
