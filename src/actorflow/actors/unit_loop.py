"""The one unit loop: where messages come from is an adapter; what happens to them is not.

Every execution unit runs ``run_unit(unit, source)``: take every message waiting at
``source`` (a thread unit's queue, a process unit's socket) and hand the drain to
``unit.push``, which gives it to the unit's core (the actors' state machines and the
local queue between them, ``protocol.unit_core``) and carries out what the core returns;
between waits, finish the acts an asynchronous stream completed and send off output pieces
waiting in a batch.  A process unit's messages to peer units are coalesced: the loop first
drains what already waits without blocking, and has the unit ``flush`` them before it
blocks.  The node's receiver is the same loop without actors (``serve``): land each message
and pass it on.

A ``Source`` answers ``take(timeout)`` with the messages for this unit, empty when
``timeout`` passed (or it consumed a message itself, say a fed piece); ``idle()`` is asked
after each empty take and ends the loop by returning False (the runtime is stopping, the
node is gone).  A source may raise to end the loop with an error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from actorflow.protocol.messages import Msg

WAIT = 0.2  # s: the longest wait before a source's idle() check
BATCH_WAIT = 0.002  # s: output pieces wait at most this long for more to batch with
STREAM_POLL = 0.0005  # s: with acts in flight on a stream that cannot wake the unit
STREAM_WAKE_WAIT = 0.05  # s: with acts in flight on a stream that wakes the unit when one
# completes (thread units); the timeout only bounds a lost wake-up
DRAIN = 256  # messages handed to the core at once, at most


class Coalesced(Protocol):
    """Outgoing messages held per peer (routing.Router with ``coalesce``): flushed before
    the loop blocks, so holding them never adds a wait."""

    @property
    def pending(self) -> bool: ...

    def flush(self) -> None: ...

    def send(self, msg: Msg) -> None: ...


class Source(Protocol):
    def take(self, timeout: float) -> list[Msg]: ...

    def idle(self) -> bool: ...


class Unit(Protocol):
    """What the loop drives (``runtime.ThreadUnit``, for thread and process units)."""

    @property
    def live(self) -> int:
        """Actors not yet exited; the loop ends at 0."""

    def push(self, msgs: list[Msg]) -> None:
        """Handle a drain of messages and carry out what follows."""

    def stream_pending(self) -> bool:
        """Acts launched on an asynchronous stream and not yet finished."""

    def drain_stream(self) -> None:
        """Finish what the stream completed."""

    def wait_timeout(self) -> float:
        """How long the loop may block for the next message now."""

    def holding(self) -> bool:
        """Outgoing messages are held back (coalesced) until ``flush``."""

    def flush(self) -> None: ...

    def idle(self) -> None:
        """Nothing came within the wait: send output pieces waiting in a batch."""

    def finish(self) -> None:
        """Every actor exited: flush what is held, before the unit reports done."""


def run_unit(unit: Unit, source: Source) -> None:
    """Dispatch messages to ``unit``'s actors until every one exited (or ``idle()`` says stop)."""
    take, idle = source.take, source.idle
    while unit.live > 0:
        if unit.stream_pending():  # an asynchronous stream: completions, then messages
            unit.drain_stream()
            if unit.live <= 0:
                break
        if unit.holding():
            msgs = take(0.0)  # drain what already waits; only then send what was collected
            if not msgs:
                unit.flush()
                msgs = take(unit.wait_timeout())
        else:
            msgs = take(unit.wait_timeout())
        if not msgs:
            unit.idle()
            if not idle():
                return
            continue
        unit.push(msgs)
    unit.finish()


def serve(receive: Callable[[float], Any], handle: Callable[[Any], None],
          running: Callable[[], bool]) -> None:
    """The node receiver's loop: ``handle`` each received message while ``running()``."""
    while running():
        m = receive(WAIT / 2)
        if m is not None:
            handle(m)
