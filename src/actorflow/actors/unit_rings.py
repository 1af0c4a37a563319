"""Shared-memory rings between the unit processes of one machine: the third tier of a message.

Actor messages between two unit processes of a machine carry no data (the regsts are in
shared memory), so they travel as 64-byte records (``_core/record.h``) through a
single-producer/single-consumer ring instead of an ipc socket: no msgpack, no ZeroMQ
thread hop, and a system call only when the reader sleeps.

- The node (``MachineRings``) makes, for every unit process, one segment holding one ring
  per other unit (``_core/ring_names.py``: named after the run, so the launcher's leftover
  sweep finds it after a SIGKILL; mode 0600) and an eventfd: the unit's doorbell, which it
  polls together with its ZeroMQ inbox (messages from other machines and from its node
  still come that way).  The eventfds reach the units with ``pass_fds``; the rest of the
  description rides in the unit's config.
- A unit (``UnitRings``) reads its own segment and writes into ring ``i`` of each peer's;
  the writer of each ring is known from its index, so a record is accepted only if its
  sender task lives on that unit (besides ``Inbound``'s checks of every field).
- Capacity: what can be in flight between two units is bounded by the register_nums of the
  regst descs between them (READYs one way, ACKs the other, one EORD per desc), so a ring is
  sized to hold all of it and a full ring means a bug: the send's wait is bounded and its
  error names the ring and the reader.

Used when the compiled core runs (``ACTORFLOW_CORE`` native, the default where it is built);
the Python reference core keeps the ipc sockets.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from actorflow.errors import ProtocolError

if TYPE_CHECKING:
    from actorflow._core._rings import RingInbox, RingOutlet, RingSegment
    from actorflow.actors.machine_view import MachineView

RECORD = struct.Struct("=7qiBBH")  # _core/record.h: src dst desc piece seq msg_id aux, slot,
RECORD_BYTES = RECORD.size  # type, cmd, flags
MIN_CAPACITY = 256
SEND_TIMEOUT = 30.0  # s a full ring may hold a sender (a bug: rings are sized for the plan)
MAX_TAKE = 256  # records taken from the rings at once


def unavailable() -> str | None:
    """Why the rings cannot be used in this process (None: they can)."""
    from actorflow import _core

    if _core.core_name() != "native":
        return "the Python core runs (ACTORFLOW_CORE=python or not built)"
    if not hasattr(os, "eventfd"):
        return "no os.eventfd on this platform"
    try:
        from actorflow._core import _rings, _zq  # noqa: F401
    except ImportError as e:
        return f"the compiled rings are not built ({e})"
    return None


def to_record(header: Sequence[int]) -> bytes:
    """``Msg.header()`` (type, src, dst, desc, slot, piece, seq, msg_id, cmd, aux) -> record."""
    t, src, dst, desc, slot, piece, seq, mid, code, aux = header
    return RECORD.pack(src, dst, desc, piece, seq, mid, aux, slot, t, code, 0)


def from_record(fields: tuple) -> list[int]:
    """A record's unpacked fields -> ``Msg.header()`` order."""
    src, dst, desc, piece, seq, mid, aux, slot, t, code, _flags = fields
    return [t, src, dst, desc, slot, piece, seq, mid, code, aux]


def in_flight_bound(view: MachineView, writer: int, reader: int) -> int:
    """The most actor messages unit ``writer`` can have sent unit ``reader`` and not yet had
    taken: a READY per regst of each desc ``writer`` produces for a consumer on ``reader``,
    an ACK per regst of each desc the other way, an EORD per (desc, consumer)."""
    mid = view.machine_id
    on = {t.task_id: t.thrd_id for t in view.tasks if t.machine_id == mid}
    n = 0
    for t in view.tasks:
        for d in t.produced.values():
            for c in d.consumer_task_ids:
                pair = (on.get(d.producer_task_id), on.get(c))
                if pair == (writer, reader):  # READYs and the EORD to that consumer
                    n += d.register_num + 1
                elif pair == (reader, writer):  # ACKs coming back
                    n += d.register_num
    return n


def capacity_for(view: MachineView, reader: int, writers: Sequence[int]) -> int:
    """One capacity for every ring into ``reader``: a power of two holding the largest bound."""
    need = max([MIN_CAPACITY, *(2 * in_flight_bound(view, w, reader) + 64 for w in writers)])
    return 1 << (need - 1).bit_length()


class MachineRings:
    """The node's side: one segment and one eventfd per unit process, made before they start."""

    def __init__(self, run_id: str, view: MachineView) -> None:
        from actorflow._core import _rings
        from actorflow._core.ring_names import ring_segment_name

        self.units = sorted(t for _, t in view.units)
        self.names = {u: ring_segment_name(run_id, view.machine_id, u) for u in self.units}
        self.eventfds: dict[int, int] = {}
        self.segments: list[RingSegment] = []
        try:
            for u in self.units:
                writers = [w for w in self.units if w != u]
                if not writers:
                    continue
                self.eventfds[u] = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
                self.segments.append(_rings.RingSegment.create(
                    self.names[u], len(writers), capacity_for(view, u, writers),
                    RECORD_BYTES, doorbell="eventfd"))
        except BaseException:
            self.close()
            raise

    def config(self) -> dict[str, Any] | None:
        """What every unit is told (the same for all): segment names and doorbell fds;
        None with a single unit (nobody to ring)."""
        if len(self.units) < 2:
            return None
        return {"units": self.units, "names": {str(u): n for u, n in self.names.items()},
                "eventfds": {str(u): fd for u, fd in self.eventfds.items()}}

    def pass_fds(self) -> tuple[int, ...]:
        return tuple(self.eventfds.values())

    def close(self) -> None:
        """Unlink every segment and close the doorbells (units keep their own copies)."""
        for s in self.segments:
            s.unlink()
            s.close()
        self.segments = []
        for fd in self.eventfds.values():
            os.close(fd)
        self.eventfds = {}


class RingBatch:
    """The records waiting for one peer unit's ring, sent at ``flush`` (routing.Router's
    coalescing: the loop flushes before it blocks) in one push, one doorbell."""

    __slots__ = ("buf", "heads", "outlet", "peer")

    def __init__(self, outlet: RingOutlet, peer: str) -> None:
        self.outlet = outlet
        self.peer = peer
        self.heads: list[list] = []  # routing.Router looks at it: non-empty = waiting
        self.buf = bytearray()

    def add(self, header: list, arrays: list[tuple[str, Any]] | None = None) -> bool:
        """Queue one record; True when a full batch must go now."""
        if arrays:
            raise ProtocolError(f"a READY with blobs for {self.peer}: inside a machine only "
                                "slot numbers travel")
        self.heads.append(header)
        self.buf += to_record(header)
        return len(self.heads) >= MAX_TAKE

    def send(self) -> None:
        if self.heads:
            self.outlet.send(self.buf, SEND_TIMEOUT)
            self.heads = []
            self.buf = bytearray()


class UnitRings:
    """One unit process's side: its inbox (its own segment) and an outlet into each peer's."""

    def __init__(self, cfg: Mapping[str, Any], thrd: int) -> None:
        from actorflow._core import _rings, _zq
        from actorflow.transport.registry import libzmq_file

        _zq.load(libzmq_file())  # the unit's one wait polls its socket and its doorbell
        units = [int(u) for u in cfg["units"]]
        names = {int(u): str(n) for u, n in cfg["names"].items()}
        fds = {int(u): int(fd) for u, fd in cfg["eventfds"].items()}
        self.thrd = thrd
        self.peers = [u for u in units if u != thrd]  # ring i of our segment: peers[i]
        self.fds = fds  # inherited from the node: ours to wait on, the peers' to ring
        self.eventfd = fds[thrd]
        self.segments = [_rings.RingSegment.attach(names[thrd], len(self.peers),
                                                   record_bytes=RECORD_BYTES)]
        self.inbox: RingInbox = self.segments[0].inbox(eventfd=self.eventfd)
        self.outlets: dict[int, RingOutlet] = {}
        for p in self.peers:
            seg = _rings.RingSegment.attach(names[p], record_bytes=RECORD_BYTES)
            self.segments.append(seg)
            writers = [u for u in units if u != p]
            self.outlets[p] = seg.outlet(writers.index(thrd), eventfd=fds[p])
        self._buf = bytearray(MAX_TAKE * RECORD_BYTES)
        self._origins = memoryview(bytearray(4 * MAX_TAKE)).cast("I")

    def batch(self, peer: int, name: str) -> RingBatch:
        return RingBatch(self.outlets[peer], name)

    def take(self) -> list[tuple[int, list[int]]]:
        """What waits in the rings: ``(writer thrd, header)`` in arrival order per writer."""
        n = self.inbox.take_into(self._buf, self._origins)
        if not n:
            return []
        peers, origins = self.peers, self._origins
        return [(peers[origins[i]], from_record(f)) for i, f in
                enumerate(RECORD.iter_unpack(memoryview(self._buf)[:n * RECORD_BYTES]))]

    def close(self) -> None:
        self.inbox.close()
        for o in self.outlets.values():
            o.close()
        for s in self.segments:
            s.close()
        for fd in self.fds.values():
            os.close(fd)
        self.fds = {}
