"""Helpers for driving the pure actor state machines by hand (no threads): tasks, actors,
messages, and ``norm`` to compare returned actions as tuples.

Imported by the protocol tests as ``from tests.protocol.by_hand import ...``.
"""

from __future__ import annotations

from typing import Any

from actorflow.plan.model import BlobDesc, RegstDesc, Task
from actorflow.protocol.kinds import make_state
from actorflow.protocol.messages import ACK, EORD, MSG_TYPE_NAMES, READY, Act, Exit, Msg
from actorflow.protocol.state import ActorState

BLOB = {"out": BlobDesc((1,), "float32")}


def make_task(task_id: int, task_type: str = "normal",
              produced: list[tuple[int, int, list[int]]] = (),
              consumed: list[int] = (), **attrs: Any) -> Task:
    """``produced``: (desc_id, register_num, consumer task ids); ``consumed``: desc ids."""
    t = Task(task_id, task_type, 0, 0, attrs=dict(attrs))
    for i, (d, n, cons) in enumerate(produced):
        t.produced[f"out{i}"] = RegstDesc(d, task_id, list(cons), n, dict(BLOB))
    for i, d in enumerate(consumed):
        t.consumed[f"in{i}"] = [d]
    return t


def actor(task_id: int, task_type: str = "normal", produced=(), consumed=(),
          producer_of: dict[int, int] | None = None, **attrs: Any) -> ActorState:
    t = make_task(task_id, task_type, produced, consumed, **attrs)
    return make_state(t, producer_of or {})


def ready(src: int, dst: int, desc: int, slot: int, piece: int, seq: int) -> Msg:
    return Msg(READY, src, dst, desc, slot, piece, seq)


def ack(src: int, dst: int, desc: int, slot: int, piece: int = 0) -> Msg:
    return Msg(ACK, src, dst, desc, slot, piece)


def eord(src: int, dst: int, desc: int, seq: int) -> Msg:
    return Msg(EORD, src, dst, desc, -1, -1, seq)


def norm(actions: list[Any]) -> list[tuple]:
    """Actions as plain tuples so tests can compare whole lists exactly."""
    out = []
    for a in actions:
        if type(a) is Msg:
            if a.type == ACK:
                out.append(("ACK", a.src, a.dst, a.regst_desc_id, a.slot, a.piece_id))
            else:
                out.append((MSG_TYPE_NAMES[a.type], a.src, a.dst, a.regst_desc_id, a.slot,
                            a.piece_id, a.seq))
        elif type(a) is Act:
            out.append(("ACT", a.task_id, a.piece_id, list(a.reads), list(a.writes)))
        elif type(a) is Exit:
            out.append(("EXIT", a.task_id))
        else:  # pragma: no cover - a new action type must be added here
            raise AssertionError(f"unknown action {a!r}")
    return out


def acts_of(actions: list[Any]) -> list[Act]:
    return [a for a in actions if type(a) is Act]

