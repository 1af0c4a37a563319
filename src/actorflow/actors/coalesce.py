"""Coalescing: a unit's actor messages to one peer in one loop turn travel as ONE message.

Each transport message costs a Python encode, a ZeroMQ send and, at the peer, a receive and
a decode; at small pieces that per-message cost is the whole hop.  A process unit therefore
collects what it sends to each peer unit while it drains what already waits in its inbox,
and ``flush()`` sends each peer's collection as one ``BATCH``: the header lists
``[msg header, blob count]`` per actor message, and the blobs of READYs that crossed
machines follow as frames in message order.  ``unpack`` gives the receiver the messages
back in order.  One comm per peer and order within a batch keep every actor pair FIFO.

The unit loop flushes before any blocking wait (so a lone message at low load still goes
out at once, no timer) and a batch flushes itself at ``MAX_MSGS`` messages or
``MAX_BYTES`` of blobs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from actorflow.actors import unit_wire as uw
from actorflow.errors import MalformedMessage
from actorflow.protocol.messages import Msg
from actorflow.transport import codec
from actorflow.transport.comm import Comm, Message

MAX_MSGS = 128  # actor messages in one batch
MAX_BYTES = 1 << 20  # blob bytes in one batch


class PeerBatch:
    """The actor messages waiting for one peer comm (sent through ``native``, the compiled
    core's libzmq driver, when given: actors/native_sockets.py)."""

    __slots__ = ("arrays", "comm", "heads", "native", "nbytes")

    def __init__(self, comm: Comm, native: Any = None) -> None:
        self.comm = comm
        self.native = native
        self.heads: list[list] = []
        self.arrays: list[tuple[str, Any]] = []
        self.nbytes = 0

    def add(self, header: list, arrays: list[tuple[str, Any]] | None = None) -> bool:
        """Queue one message; True when the batch reached a bound and must go now."""
        if arrays:
            self.heads.append([header, len(arrays)])
            self.arrays.extend(arrays)
            self.nbytes += sum(a.nbytes for _, a in arrays)
        else:
            self.heads.append([header, 0])
        return len(self.heads) >= MAX_MSGS or self.nbytes >= MAX_BYTES

    def send(self) -> None:
        heads = self.heads
        if self.native is not None:
            if len(heads) == 1:
                self.native.send(self.comm, codec.encode(uw.MSG, heads[0][0], self.arrays))
            else:
                self.native.send(self.comm, codec.encode(uw.BATCH, heads, self.arrays))
        elif len(heads) == 1:  # a lone message (low load, ping-pong) goes as the plain MSG
            if self.arrays:
                self.comm.send(uw.MSG, heads[0][0], self.arrays)
            else:
                self.comm.send_head(codec.encode_head(uw.MSG, heads[0][0]))
        else:
            self.comm.send(uw.BATCH, heads, self.arrays)
        self.heads = []
        self.arrays = []
        self.nbytes = 0


def unpack(m: Message, where: str) -> Iterator[Message]:
    """The actor messages of a received ``BATCH``, in order, each as a one-message ``MSG``
    (with its own blobs) for ``landing.land``."""
    heads = m.body
    metas, frames = m.metas or [], m.frames
    if not isinstance(heads, list):
        raise MalformedMessage(f"{where}: a BATCH whose body is {type(heads).__name__}, "
                               "expected a list of [header, blob count]")
    i = 0
    for entry in heads:
        try:
            header, n = entry
        except (TypeError, ValueError) as e:
            raise MalformedMessage(f"{where}: a BATCH entry {entry!r:.80} is not "
                                   "[header, blob count]") from e
        if not isinstance(n, int) or n < 0 or i + n > len(metas):
            raise MalformedMessage(f"{where}: a BATCH entry claims {n!r} blobs but "
                                   f"{len(metas) - i} remain of {len(metas)}")
        if n:
            yield Message(uw.MSG, header, metas[i:i + n], frames[i:i + n], m.peer)
            i += n
        else:
            yield Message(uw.MSG, header, None, [], m.peer)
    if i != len(metas):
        raise MalformedMessage(f"{where}: a BATCH carries {len(metas)} blobs, its entries "
                               f"name {i}")


def land_batch(m: Message, land: Callable[[Message], Msg | None], where: str,
               check: Callable[[Any], Msg | None]) -> list[Msg]:
    """Every actor message of a ``BATCH``, landed, in order (feeds taken are left out).

    Header-only entries (every one inside a machine) go through ``check`` (the receiver's
    inbound validation: ``None`` drops the entry); entries with blobs go through ``land``
    to be validated and written into their receive buffer."""
    out = []
    if not m.metas:  # the hot path: slot numbers only
        try:
            for h, n in m.body:
                if n:
                    break  # blobs claimed but none came: unpack names it
                msg = check(h)
                if msg is not None:
                    out.append(msg)
            else:
                return out
        except (TypeError, ValueError):
            pass  # a malformed entry: unpack names it
        out = []
    for sub in unpack(m, where):
        if sub.metas:
            msg = land(sub)
        else:
            try:
                msg = check(sub.body)
            except TypeError as e:
                raise MalformedMessage(f"{where}: an actor message with a malformed header "
                                       f"{sub.body!r:.80}") from e
        if msg is not None:
            out.append(msg)
    return out
