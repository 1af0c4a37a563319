"""One unit's actors as one machine: a drain of messages in, the actions to carry out back.

This is the seam between the protocol and the runtime, put where OneFlow puts it (a thread
owns its actors and their local message queue; ``Thread::PollMsgChannel``): the runtime hands
a unit's core every message that arrived (``push``), the core runs the actors' state
machines, delivers messages between actors of the unit itself (the *local queue*, no lock,
never seen by the runtime) and returns, in order, what only the runtime can do:

- ``Msg`` for a task of another unit (the runtime routes it: inbox, ring or socket);
- ``Act`` to launch on the unit's stream; once the stream reports it finished, the runtime
  calls ``completed(acts)``, which returns the READYs/ACKs (and acts) that follow;
- ``Exit`` when an actor finished.

The core handles one message at a time, the local queue before the next pushed message,
and returns as soon as a message has started an act: an act on an inline stream runs (and
its READYs leave) before the next message is looked at, as when each actor had its own
loop, so stages pipeline.  Messages not yet handled stay queued in the core (``busy``);
``completed`` goes on with them, and ``push([])`` does when no completion is due.

``blocked_on()`` says why each actor waits (plain data, for hang reports).  ``PyUnitCore``
is the reference: today's state machines (``protocol.state``/``kinds``) plus the local
queue.  The compiled core (``actorflow._core``) implements the same ``UnitCore`` protocol,
and the differential test requires both to return the same actions in the same order.

Tracing is a hook (``CoreRecorder``): ``ring`` sees every message handed to an actor and
every message for another unit (the flight recorder); a ``timed`` recorder gets ``recv``
per message handed to an actor and ``send`` per message an actor sent.  The runtime records
``act_begin``/``act_end`` itself, around its stream.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from actorflow.errors import ProtocolError
from actorflow.protocol.kinds import make_state
from actorflow.protocol.messages import Act, Exit, Msg
from actorflow.protocol.state import ActorState
from actorflow.protocol.task import TaskView

Action = Msg | Act | Exit


class CoreRecorder(Protocol):
    """The trace hooks a core calls (``trace.recorder``'s unit objects satisfy it)."""

    @property
    def ring(self) -> Callable[[Msg], None] | None: ...

    @property
    def timed(self) -> bool: ...

    def send(self, msg: Msg) -> None: ...

    def recv(self, msg: Msg) -> None: ...


class UnitCore(Protocol):
    """The actors of one unit behind one interface (``PyUnitCore``, ``_core.NativeUnitCore``)."""

    @property
    def live(self) -> int:
        """Actors of this unit that have not exited."""

    @property
    def busy(self) -> bool:
        """Messages are queued in the core (local or pushed) and not handled yet."""

    def hosts(self, task_id: int) -> bool: ...

    def push(self, msgs: Iterable[Msg]) -> list[Action]:
        """Queue ``msgs`` and handle queued messages in order (the local queue first) until
        one starts an act or none is left; return the actions for the runtime, in the
        order they arose."""

    def completed(self, acts: Iterable[Act]) -> list[Action]:
        """The stream finished ``acts`` (in this order): their READYs/ACKs and what follows,
        then queued messages as ``push`` handles them."""

    def blocked_on(self) -> list[dict[str, Any]]:
        """Every actor's ``blocked_on()`` dict (``protocol.state``), in task order."""


class PyUnitCore:
    """The reference core: one pure state machine per task and a local deque."""

    def __init__(self, tasks: Sequence[TaskView], producer_of: dict[int, int],
                 name: str = "unit", recorder: CoreRecorder | None = None) -> None:
        self.name = name
        self.states: dict[int, ActorState] = {t.task_id: make_state(t, producer_of)
                                              for t in tasks}
        self.live = len(self.states)
        self.local: deque[Msg] = deque()  # between this unit's actors: handled first
        self.pushed: deque[Msg] = deque()
        self.ring = recorder.ring if recorder is not None else None
        self.timed = recorder if recorder is not None and recorder.timed else None

    @property
    def busy(self) -> bool:
        return bool(self.local or self.pushed)

    def hosts(self, task_id: int) -> bool:
        return task_id in self.states

    def push(self, msgs: Iterable[Msg]) -> list[Action]:
        self.pushed.extend(msgs)
        out: list[Action] = []
        self._run(out, False)
        return out

    def completed(self, acts: Iterable[Act]) -> list[Action]:
        out: list[Action] = []
        states = self.states
        started = False
        for a in acts:
            st = states.get(a.task_id)
            if st is None:
                raise ProtocolError(f"{self.name}: completed act of task {a.task_id}, which it "
                                    "does not host")
            started = self._carry(st.act_done(a), out) or started
        self._run(out, started)
        return out

    def blocked_on(self) -> list[dict[str, Any]]:
        return [s.blocked_on() for _t, s in sorted(self.states.items())]

    # -- inside ------------------------------------------------------------------------
    def _run(self, out: list[Action], started: bool) -> None:
        """Handle queued messages, local ones first, until one started an act."""
        local, pushed, states = self.local, self.pushed, self.states
        while not started:
            if local:
                m = local.popleft()
            elif pushed:
                m = pushed.popleft()
            else:
                return
            st = states.get(m.dst)
            if st is None:
                raise ProtocolError(f"{self.name} got {m!r} for a task it does not host")
            if self.timed is not None:
                self.timed.recv(m)
            elif self.ring is not None:
                self.ring(m)
            started = self._carry(st.handle(m), out)

    def _carry(self, actions: list[Any], out: list[Action]) -> bool:
        """Queue local messages, pass the rest on; True when ``actions`` start an act."""
        timed, ring, states, local = self.timed, self.ring, self.states, self.local
        started = False
        for a in actions:
            tp = type(a)
            if tp is Msg:
                if timed is not None:
                    timed.send(a)
                if a.dst in states:
                    local.append(a)
                    continue
                if ring is not None:
                    ring(a)
            elif tp is Act:
                started = True
            elif tp is Exit:
                self.live -= 1
            else:
                raise ProtocolError(f"{self.name}: a state machine returned {a!r}, which is "
                                    "no action (Msg, Act, Exit)")
            out.append(a)
        return started
