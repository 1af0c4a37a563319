"""Replay one actor: feed its recorded messages through the pure state machine and compare
what it would do with what the recording says it did.

This is the one module of ``trace`` that imports actor code, and only the pure part
(``protocol.kinds`` / ``protocol.state`` / ``protocol.messages``: no threads, sockets or
kernels).  The runtime executes a state machine's actions in order and calls
``act_done(act)`` when the stream reports the act complete, which the recording marks with
ACT_END; so, for one actor, the recorded SEND and ACT_BEGIN events must equal, one for one,
the actions the state machine returns when given the recorded RECV and ACT_END events.
The first event where they differ is the divergence.
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from actorflow.errors import ActorflowError, TraceError
from actorflow.protocol.kinds import make_state
from actorflow.protocol.messages import MSG_TYPE_NAMES, Act, Exit, Msg
from actorflow.trace.events import (
    ACT_BEGIN,
    ACT_END,
    READY,
    RECV,
    SEND,
    ActEvent,
    Event,
    MsgEvent,
)
from actorflow.trace.merge import Trace, load_trace


@dataclass
class ReplayResult:
    task_id: int
    label: str
    events: int  # recorded events of this actor that were checked
    messages: int  # recorded messages fed to the state machine
    divergence: str = ""  # empty: the recording matches the state machine
    index: int = -1  # the diverging event's index among this actor's events
    last_message: str = ""
    culprit: str = ""  # the recorded message that explains the divergence, when one does

    @property
    def ok(self) -> bool:
        return not self.divergence

    def to_dict(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "label": self.label, "events": self.events,
                "messages": self.messages, "ok": self.ok, "divergence": self.divergence,
                "index": self.index, "last_message": self.last_message,
                "culprit": self.culprit}

    def format(self) -> str:
        head = f"replay of task {self.task_id} ({self.label}): {self.events} events, " \
               f"{self.messages} messages fed to the state machine"
        if self.ok:
            return f"{head}: no divergence"
        fed = f"\n  last message fed: {self.last_message}" if self.last_message else ""
        if self.culprit:
            fed += f"\n  divergent message: {self.culprit}"
        return f"{head}\nFIRST DIVERGENCE at event #{self.index}: {self.divergence}{fed}"


def _describe_action(a: Any) -> str:
    if type(a) is Msg:
        return (f"SEND {MSG_TYPE_NAMES[a.type]} {a.src}->{a.dst} desc={a.regst_desc_id} "
                f"slot={a.slot} piece={a.piece_id} seq={a.seq}")
    if type(a) is Act:
        return (f"ACT_BEGIN task {a.task_id} act {a.act_id} piece {a.piece_id} "
                f"reads={[tuple(r) for r in a.reads]} writes={[tuple(w) for w in a.writes]}")
    return repr(a)


def _same_send(a: Any, ev: MsgEvent) -> bool:
    return type(a) is Msg and a.header()[:8] == ev.header()[:8]


def _same_act(a: Any, ev: ActEvent) -> bool:
    return (type(a) is Act and a.act_id == ev.act_id and a.piece_id == ev.piece
            and [tuple(r) for r in a.reads] == list(ev.reads)
            and [tuple(w) for w in a.writes] == list(ev.writes))


def _task(directory: Path, task_id: int) -> Any:
    from actorflow.plan.io import load_plan

    for f in sorted(directory.glob("plan*.plan")):
        for t in load_plan(f, validate=False).tasks:
            if t.task_id == task_id:
                return t
    raise TraceError(f"{directory}: no saved plan has task {task_id}")


def replay_actor(directory: str | os.PathLike, task_id: int,
                 trace: Trace | None = None) -> ReplayResult:
    d = Path(directory)
    trace = trace or load_trace(d)
    task = _task(d, task_id)
    producer_of = {int(desc): tid for tid, t in trace.tasks.items()
                   for desc in t.get("produced", {})}
    state = make_state(task, producer_of)
    evs: list[Event] = [e for e in trace.units.get((task.machine_id, task.thrd_id), [])
                        if e.task == task_id]
    if not evs:
        raise TraceError(f"{d}: no recorded events of task {task_id} ({task.label}); "
                         "was the run traced with --trace / Session(trace=DIR)?")
    res = ReplayResult(task_id, task.label, len(evs), 0)
    expected: deque[Any] = deque()
    started: dict[int, Act] = {}
    readies: list[tuple[int, MsgEvent]] = []  # fed READYs, to name the one an act read

    def diverge(i: int, text: str) -> ReplayResult:
        res.divergence, res.index = text, i
        return res

    def push(actions: list[Any]) -> None:
        expected.extend(a for a in actions if type(a) is not Exit)

    for i, ev in enumerate(evs):
        if isinstance(ev, MsgEvent) and ev.kind == RECV:
            if expected:
                return diverge(i, f"recorded {ev.describe()}, but the state machine would "
                                  f"first have done {_describe_action(expected[0])}")
            res.messages += 1
            res.last_message = f"#{i} {ev.describe()}"
            if ev.type == READY:
                readies.append((i, ev))
            try:
                push(state.handle(Msg.from_header(ev.header())))
            except ActorflowError as e:
                return diverge(i, f"the state machine rejects recorded {ev.describe()}: {e}")
        elif isinstance(ev, MsgEvent) and ev.kind == SEND:
            if not expected:
                return diverge(i, f"recorded {ev.describe()}, but the state machine sends "
                                  "nothing here")
            a = expected.popleft()
            if not _same_send(a, ev):
                return diverge(i, f"recorded {ev.describe()}, but the state machine does "
                                  f"{_describe_action(a)}")
        elif isinstance(ev, ActEvent) and ev.kind == ACT_BEGIN:
            a = expected.popleft() if expected else None
            if a is None or not _same_act(a, ev):
                what = _describe_action(a) if a is not None else "nothing"
                res.culprit = _culprit(a, ev, readies)
                return diverge(i, f"recorded {ev.describe()}, but the state machine does "
                                  f"{what}")
            started[a.act_id] = a
        elif isinstance(ev, ActEvent) and ev.kind == ACT_END:
            a = started.pop(ev.act_id, None)
            if a is None:
                return diverge(i, f"recorded {ev.describe()} of an act that never began")
            try:
                push(state.act_done(a))
            except ActorflowError as e:
                return diverge(i, f"the state machine rejects {ev.describe()}: {e}")
    if expected:
        return diverge(len(evs), "the recording ends, but the state machine would still do "
                                 f"{_describe_action(expected[0])}")
    return res


def _culprit(a: Any, ev: ActEvent, readies: list[tuple[int, MsgEvent]]) -> str:
    """The fed READY that announced the regst a diverging act reads differently."""
    if type(a) is not Act:
        return ""
    recorded = dict(ev.reads)
    for desc, slot in a.reads:
        if recorded.get(desc) != slot:
            for i, r in reversed(readies):
                if r.desc == desc and r.slot == slot and r.piece == a.piece_id:
                    return (f"#{i} {r.describe()} (the recorded act read slot "
                            f"{recorded.get(desc)} of desc {desc} for this piece)")
    return ""


def replay_all(directory: str | os.PathLike) -> list[ReplayResult]:
    d = Path(directory)
    trace = load_trace(d)
    tids = sorted({e.task for e in trace.events if e.task >= 0})
    return [replay_actor(d, t, trace) for t in tids]
