"""The one unit loop: where messages come from is an adapter; what happens to them is not.

Every execution unit runs ``run_unit(unit, source)``: take the next message from the
unit's local deque (messages between its own actors), else from ``source`` (a thread
unit's queue, a process unit's socket), hand it to ``unit.dispatch`` (the actor's pure
state machine plus the execution of its actions), and between waits poll an asynchronous
stream for completed acts and send off output pieces waiting in a batch.  A process unit's
messages to peer units are coalesced (``runtime.coalesced``): the loop first drains what
already waits without blocking, and flushes the collected messages before it blocks.  The node's
receiver is the same loop without actors (``serve``): land each message and pass it on.

A ``Source`` answers ``next(timeout)`` with a message for this unit, or ``None`` when
``timeout`` passed (or it consumed a message itself, say a fed piece); ``idle()`` is asked
after each ``None`` and ends the loop by returning False (the runtime is stopping, the
node is gone).  A source may raise to end the loop with an error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from actorflow.protocol.messages import Msg

if TYPE_CHECKING:
    from actorflow.actors.runtime import ThreadUnit

WAIT = 0.2  # s: the longest wait before a source's idle() check
BATCH_WAIT = 0.002  # s: output pieces wait at most this long for more to batch with
STREAM_POLL = 0.0005  # s: with acts in flight on a stream that cannot wake the unit
STREAM_WAKE_WAIT = 0.05  # s: with acts in flight on a stream that wakes the unit when one
# completes (thread units); the timeout only bounds a lost wake-up


class Coalesced(Protocol):
    """Outgoing messages held per peer (routing.Router with ``coalesce``): flushed before
    the loop blocks, so holding them never adds a wait."""

    @property
    def pending(self) -> bool: ...

    def flush(self) -> None: ...


class Source(Protocol):
    def next(self, timeout: float) -> Msg | None: ...

    def idle(self) -> bool: ...


def run_unit(unit: ThreadUnit, source: Source) -> None:
    """Dispatch messages to ``unit``'s actors until every one exited (or ``idle()`` says stop)."""
    local, dispatch, stream = unit.local, unit.dispatch, unit.stream
    batcher = unit.runtime.batcher
    out = unit.runtime.coalesced
    nxt, idle = source.next, source.idle
    while unit.live > 0:
        if local:
            dispatch(local.popleft())
            continue
        if stream.has_pending():  # an asynchronous stream: completions, then messages
            unit._drain_stream()
            if local or not stream.has_pending():
                continue
            timeout = STREAM_WAKE_WAIT if unit.woken else STREAM_POLL
        else:
            timeout = BATCH_WAIT if batcher is not None and batcher.pending else WAIT
        if out is not None and out.pending:
            msg = nxt(0.0)  # drain what already waits; only then send what was collected
            if msg is None:
                out.flush()
                msg = nxt(timeout)
        else:
            msg = nxt(timeout)
        if msg is None:
            if batcher is not None:
                batcher.flush()
            if not idle():
                return
            continue
        dispatch(msg)
    if out is not None:
        out.flush()
    if batcher is not None:
        batcher.flush()  # before the unit says it is done: every piece is out first


def serve(receive: Callable[[float], Any], handle: Callable[[Any], None],
          running: Callable[[], bool]) -> None:
    """The node receiver's loop: ``handle`` each received message while ``running()``."""
    while running():
        m = receive(WAIT / 2)
        if m is not None:
            handle(m)
