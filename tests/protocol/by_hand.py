"""Helpers for driving the actor state machines by hand (no threads), on every core:
tasks, actors, messages, and ``norm`` to compare returned actions as tuples.

Imported by the protocol tests as ``from tests.protocol.by_hand import ...``.  ``actor(...)``
builds one actor as a unit core of its own on the core the ``impl`` fixture (conftest.py)
chose, so every rule is checked on the Python reference and on the compiled core, through
``blocked_on()`` only.
"""

from __future__ import annotations

from typing import Any

from actorflow.actors.cores import make_unit_core
from actorflow.plan.model import BlobDesc, RegstDesc, Task
from actorflow.protocol.messages import ACK, EORD, MSG_TYPE_NAMES, READY, Act, Exit, Msg

BLOB = {"out": BlobDesc((1,), "float32")}
IMPL = ["python"]  # the core ``actor`` builds on (set by the ``impl`` fixture)


class Probe:
    """One actor alone in a unit core: what the tests drive and read."""

    def __init__(self, task: Task, producer_of: dict[int, int]) -> None:
        self.core = make_unit_core([task], producer_of, f"test unit of task {task.task_id}",
                                   impl=IMPL[0])

    def handle(self, msg: Msg) -> list[Any]:
        return self.core.push([msg])

    def act_done(self, act: Act) -> list[Any]:
        return self.core.completed([act])

    def blocked_on(self) -> dict[str, Any]:
        (s,) = self.core.blocked_on()
        return s

    @property
    def status(self) -> str:
        return self.blocked_on()["status"]

    @property
    def acts(self) -> int:
        return self.blocked_on()["acts"]

    @property
    def inflight(self) -> list[int]:
        """Pieces of the acts in flight."""
        return self.blocked_on()["inflight_pieces"]

    @property
    def pieces_made(self) -> int:
        return self.blocked_on()["pieces_made"]


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
          producer_of: dict[int, int] | None = None, **attrs: Any) -> Probe:
    t = make_task(task_id, task_type, produced, consumed, **attrs)
    return Probe(t, producer_of or {})


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

