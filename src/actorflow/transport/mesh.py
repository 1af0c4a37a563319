"""Point-to-point messages between the ranks of a process group, with loss detection.

Each rank listens on one inbox (a "pull" ``Listener``) and connects one "push" ``Comm``
to every peer's inbox, so messages from one sender arrive in the order sent.  A message is
the codec's header (kind ``MESH``, body ``[src_rank, key]``) plus buffer frames sent
without copying.  A mesh of one rank has nobody to hear from and opens no socket.

Every socket is secured by the transport's ``Security`` (the process default unless one is
given: the run's CURVE key after ``use_key``), so a peer without the key never reaches the
decoder.  What does reach it and is malformed (undecodable, over the limits, not a mesh
message, a sender rank out of range) goes to ``reject``: counted and logged once per
peer; when the inbox is authenticated it is also a ``MalformedMessage`` naming the peer,
since only a holder of the run's key could have sent it (the data plane's policy).

A peer that dies is noticed quickly: every comm's socket is watched by a ZeroMQ monitor, and
the kernel closes a dead process's sockets, so its connection drops within milliseconds.
``Mesh.lost`` maps such ranks to when that happened; a peer that said ``goodbye(note)``
first is *gone*, not lost, and ``Mesh.gone`` keeps its note (why it left).  The mesh only
reports; the process group above decides what a loss means for the operation waiting on it.

Leaving: messages are zero-copy frames that ZeroMQ's I/O thread sends after ``send``
returned, so a rank that leaves right after its last collective may still have them queued
(a slow or paused peer).  ``goodbye`` is sent tracked and ``flush`` waits, bounded, until
every live peer's goodbye left (and so all before it) or the peer is lost; ``close`` then
ends the ZeroMQ context of the mesh's comms, which waits for what is still in libzmq's
buffers.  The comms have a context of their own so that no other socket of the process can
hold that up (the inbox, a server needing the data plane's ZAP handler, stays there).
"""

from __future__ import annotations

import itertools
import os
import socket as pysocket
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import zmq
from zmq.utils.monitor import parse_monitor_message

from actorflow.errors import MalformedMessage, TransportError
from actorflow.transport.comm import Comm, Listener, connect, listen
from actorflow.transport.registry import end_plane
from actorflow.transport.security import Security, default_security

MESH = 32  # the message kind of mesh messages (the codec's header carries it)
BYE = "bye"  # the key of a goodbye message: the peer is leaving on purpose

_WATCH = zmq.EVENT_DISCONNECTED
_LINGER_MS = 2000  # closing without a goodbye: what was sent may still reach live peers
_TAIL_MS = 1000  # after a goodbye left: the last bytes in libzmq's buffer
_planes = itertools.count()


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def reachable_host(master_host: str) -> str:
    """This host's address as seen from ``master_host`` (the interface that routes there)."""
    if master_host in ("localhost", "") or master_host.startswith("127."):
        return "127.0.0.1"
    s = pysocket.socket(pysocket.AF_INET, pysocket.SOCK_DGRAM)
    try:
        s.connect((master_host, 9))  # no packet is sent: this only picks a route
        return str(s.getsockname()[0])
    except OSError:
        return "127.0.0.1"
    finally:
        s.close()


class Mesh:
    """One rank's end of an all-to-all mesh of comms (a "pull" listener, a "push" per peer)."""

    def __init__(self, rank: int, world_size: int, host: str = "127.0.0.1", *,
                 security: Security | None = None) -> None:
        self.rank, self.world_size = rank, world_size
        self.security = security or default_security()  # decided now, for every socket
        self.dropped = 0  # malformed messages received (and dropped, or raised)
        self.dropped_by: dict[str, int] = {}  # peer -> its malformed messages
        self.log: Callable[[str], None] = _to_stderr
        self.lost: dict[int, float] = {}  # peer -> monotonic time its connection dropped
        self.gone: dict[int, Any] = {}  # peers that said goodbye -> their note
        self._inbox: Listener | None = None
        self.address = ""
        self._poller = zmq.Poller()
        # the comms' own context (see close); the inbox stays on the data plane, whose ZAP
        # handler authenticates it: a context of clients only needs none to be stopped
        self._plane = f"mesh-{os.getpid()}-{next(_planes)}"
        self._byes: dict[int, zmq.MessageTracker] = {}  # peer -> its goodbye's tracker
        if world_size > 1:
            self._inbox = listen(f"tcp://{host}:0", "pull", security=self.security,
                                 name=f"collective inbox of rank {rank}")
            self.address = self._inbox.address
            self._poller.register(self._inbox._sock, zmq.POLLIN)
        self.addresses: dict[int, str] = {rank: self.address}
        self._out: dict[int, Comm] = {}
        self._mon: dict[zmq.Socket, int] = {}
        self._closed = False

    # -- setup -------------------------------------------------------------------------
    def connect(self, addresses: dict[int, str]) -> None:
        """Open a comm to every other rank's inbox, watched for disconnects: a connection
        drops only when the peer's process closes it (or dies).  Connecting does not wait;
        the first collective (the world group's barrier) proves every link."""
        for peer, addr in sorted(addresses.items()):
            self.addresses.setdefault(peer, addr)
            if peer == self.rank or peer in self._out:
                continue
            comm = connect(addr, "push", security=self.security, plane=self._plane,
                           name=f"collective comm rank {self.rank} -> rank {peer}")
            mon = comm._sock.get_monitor_socket(_WATCH)
            self._mon[mon] = peer
            self._poller.register(mon, zmq.POLLIN)
            self._out[peer] = comm

    # -- messages ----------------------------------------------------------------------
    def same_host(self, ranks: Sequence[int]) -> bool:
        """Whether ``ranks`` all listen on one host address (so they share /dev/shm)."""
        hosts = {self.addresses.get(r, "?").rpartition(":")[0] for r in ranks}
        return len(hosts) == 1 and "?" not in hosts and os.path.isdir("/dev/shm")

    def send(self, peer: int, key: Any, frames: Sequence[Any] = ()) -> None:
        """Send ``key`` (msgpack-able) and buffers (arrays or received frames) to ``peer``;
        buffers are not copied, so the caller must not change them until the peer has
        received them."""
        comm = self._out.get(peer)
        if comm is None:
            raise TransportError(f"rank {self.rank} has no connection to rank {peer} "
                                 f"(world size {self.world_size})")
        arrays = [("", f if isinstance(f, np.ndarray) else np.frombuffer(f.buffer, np.uint8))
                  for f in frames]
        comm.send(MESH, [self.rank, key], arrays)

    def recv(self, timeout: float) -> tuple[int, Any, list[zmq.Frame]] | None:
        """The next well-formed message ``(src, key, frames)``, or None after ``timeout`` s
        (connection events are processed meanwhile: see ``lost``)."""
        deadline = time.monotonic() + timeout
        inbox = self._inbox
        if inbox is None:  # a mesh of one: nobody can send
            time.sleep(max(0.0, timeout))
            return None
        while True:
            try:
                msg = inbox.recv(0)
            except MalformedMessage as e:
                self.reject(str(e).partition("message rejected: ")[2] or str(e), "?")
                continue
            if msg is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                ready = dict(self._poller.poll(int(left * 1000) + 1))
                if len(ready) > (inbox._sock in ready):
                    self._events()
                continue
            body = msg.body
            if msg.kind != MESH or not isinstance(body, list) or len(body) != 2:
                self.reject(f"message kind {msg.kind} with a {type(body).__name__} body is "
                            f"no mesh message", "?")
                continue
            if not (isinstance(body[0], int) and not isinstance(body[0], bool)
                    and 0 <= body[0] < self.world_size and body[0] != self.rank):
                self.reject(f"sender rank {body[0]!r:.20} is not another rank of "
                            f"{self.world_size}", "?")
                continue
            src, key = body
            if isinstance(key, list) and len(key) == 2 and key[0] == BYE:
                self.gone[src] = key[1]
                continue
            return src, key, msg.frames

    def goodbye(self, note: Any = None) -> None:
        """Tell every peer this rank is leaving on purpose (its disconnect is no loss);
        ``note`` (msgpack-able) says why, e.g. which other rank's loss made it give up.
        Nothing may be sent after it; ``flush`` waits until it left."""
        self._events()
        for peer, comm in self._out.items():
            if peer not in self.lost:
                self._byes[peer] = comm.send_tracked(MESH, [self.rank, [BYE, note]])

    def flush(self, timeout: float) -> list[int]:
        """Wait until every peer's goodbye left this process, or the peer is lost (what is
        queued for a dead peer never leaves), for at most ``timeout`` s; returns the live
        peers whose goodbye is still queued then (paused or stuck: given up on)."""
        deadline = time.monotonic() + timeout
        waiting = dict(self._byes)
        while True:
            self._events()
            for peer in [p for p, t in waiting.items() if t.done or p in self.lost]:
                del waiting[peer]
            left = deadline - time.monotonic()
            if not waiting or left <= 0:
                return sorted(waiting)
            try:
                next(iter(waiting.values())).wait(min(0.05, left))
            except zmq.NotDone:
                pass  # look for lost peers again

    def close(self, timeout: float = 5.0) -> bool:
        """Close every socket and end the mesh's context: waits (at most ``timeout`` s, and
        at most each socket's linger) until libzmq sent what is left for live peers.
        Returns False if the context did not end in time (left to the process's exit)."""
        if self._closed:
            return True
        self._closed = True
        self._events()
        for comm in self._out.values():
            comm._sock.disable_monitor()
        for mon in self._mon:
            mon.close(0)
        for peer, comm in self._out.items():
            comm.close(self._linger(peer))
        if self._inbox is not None:
            self._inbox.close()
        return end_plane(self._plane, timeout)

    def _linger(self, peer: int) -> int:
        """How long a closed comm may still send: nothing to a dead peer or one given up
        on; the tail of the buffer after a goodbye left; a while with no goodbye."""
        if peer in self.lost:
            return 0
        bye = self._byes.get(peer)
        if bye is None:
            return _LINGER_MS
        return _TAIL_MS if bye.done else 0

    def reject(self, problem: str, peer: str) -> None:
        """A malformed message from ``peer`` (``rank N`` as it claims, ``?`` when it cannot
        be told): counted and logged the first time per peer; on an authenticated inbox
        also raised, naming it: a holder of the run's key sending garbage is a bug to see."""
        n = self.dropped_by.get(peer, 0) + 1
        self.dropped_by[peer] = n
        self.dropped += 1
        err = MalformedMessage(f"collective inbox of rank {self.rank} ({self.address}): "
                               f"malformed message from peer {peer} dropped ({problem})")
        if self.security.authenticated:
            raise err
        if n == 1:
            self.log(str(err))

    # -- internals ---------------------------------------------------------------------
    def _events(self) -> None:
        for mon, peer in self._mon.items():
            while mon.poll(0):
                event = parse_monitor_message(mon.recv_multipart())["event"]
                if event == zmq.EVENT_DISCONNECTED and peer not in self.lost:
                    self.lost[peer] = time.monotonic()


__all__ = ["BYE", "MESH", "Mesh", "reachable_host"]
