"""Point-to-point messages between the ranks of a process group, with loss detection.

Each rank binds one inbox (a PULL socket) and connects one PUSH socket to every peer's
inbox, so messages from one sender arrive in the order sent.  A message is a msgpack
header ``[MESH_VERSION, src_rank, key]`` plus raw buffer frames sent without copying.
The receiver drops (and counts) frames it cannot decode, so a stray sender cannot crash
a collective.

A peer that dies is noticed quickly: every PUSH socket is watched by a ZeroMQ monitor, and
the kernel closes a dead process's sockets, so its connection drops within milliseconds.
``Mesh.lost`` maps such ranks to when that happened; a peer that said ``goodbye(note)``
first is *gone*, not lost, and ``Mesh.gone`` keeps its note (why it left).  The mesh only reports; the process group above decides what a loss
means for the operation waiting on it.
"""

from __future__ import annotations

import socket as pysocket
import time
from collections.abc import Sequence
from typing import Any

import msgpack
import zmq
from zmq.utils.monitor import parse_monitor_message

from actorflow.errors import TransportError
from actorflow.transport.registry import bind, connect, context

MESH_VERSION = 1
BYE = "bye"  # the key of a goodbye message: the peer is leaving on purpose

_pack = msgpack.Packer(use_bin_type=True).pack
_WATCH = zmq.EVENT_CONNECTED | zmq.EVENT_DISCONNECTED | zmq.EVENT_CLOSED


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
    """One rank's end of an all-to-all mesh of PUSH/PULL sockets."""

    def __init__(self, rank: int, world_size: int, host: str = "127.0.0.1") -> None:
        self.rank, self.world_size = rank, world_size
        self.dropped = 0  # malformed messages received and ignored
        self.lost: dict[int, float] = {}  # peer -> monotonic time its connection dropped
        self.gone: dict[int, Any] = {}  # peers that said goodbye -> their note
        self._ctx = context()
        self._inbox = self._ctx.socket(zmq.PULL)
        self._inbox.linger = 0
        self._inbox.rcvhwm = 0
        self.address = bind(self._inbox, f"tcp://{host}:0")
        self._out: dict[int, zmq.Socket] = {}
        self._mon: dict[zmq.Socket, int] = {}
        self._connected: set[int] = set()
        self._poller = zmq.Poller()
        self._poller.register(self._inbox, zmq.POLLIN)
        self._closed = False

    # -- setup -------------------------------------------------------------------------
    def connect(self, addresses: dict[int, str]) -> None:
        """Open a PUSH socket to every other rank's inbox (watched for disconnects)."""
        for peer, addr in sorted(addresses.items()):
            if peer == self.rank or peer in self._out:
                continue
            s = self._ctx.socket(zmq.PUSH)
            s.linger = 2000
            s.sndhwm = 0  # never block a sender: collectives bound their own waits
            mon = s.get_monitor_socket(_WATCH)
            self._mon[mon] = peer
            self._poller.register(mon, zmq.POLLIN)
            connect(s, addr)
            self._out[peer] = s

    def connected(self) -> set[int]:
        """Peers whose connection is established (after ``connect``)."""
        self._events()
        return set(self._connected)

    # -- messages ----------------------------------------------------------------------
    def send(self, peer: int, key: Any, frames: Sequence[Any] = ()) -> None:
        """Send ``key`` (msgpack-able) and buffers to ``peer``; buffers are not copied, so
        the caller must not change them until the peer has received them."""
        sock = self._out.get(peer)
        if sock is None:
            raise TransportError(f"rank {self.rank} has no connection to rank {peer} "
                                 f"(world size {self.world_size})")
        head = _pack([MESH_VERSION, self.rank, key])
        if not frames:
            sock.send(head)
            return
        sock.send(head, zmq.SNDMORE)
        last = len(frames) - 1
        for i, f in enumerate(frames):
            sock.send(f, 0 if i == last else zmq.SNDMORE, copy=False)

    def recv(self, timeout: float) -> tuple[int, Any, list[zmq.Frame]] | None:
        """The next well-formed message ``(src, key, frames)``, or None after ``timeout`` s
        (connection events are processed meanwhile: see ``lost``)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                parts = self._inbox.recv_multipart(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                ready = dict(self._poller.poll(int(left * 1000) + 1))
                if len(ready) > (self._inbox in ready):
                    self._events()
                continue
            msg = self._decode(parts)
            if msg is not None:
                key = msg[1]
                if isinstance(key, tuple) and len(key) == 2 and key[0] == BYE:
                    self.gone[msg[0]] = key[1]
                    continue
                return msg

    def goodbye(self, note: Any = None) -> None:
        """Tell every peer this rank is leaving on purpose (its disconnect is no loss);
        ``note`` (msgpack-able) says why, e.g. which other rank's loss made it give up."""
        for peer in self._out:
            if peer not in self.lost:
                self.send(peer, (BYE, note))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._events()
        for s in self._out.values():
            s.disable_monitor()
        for mon in self._mon:
            mon.close(0)
        for peer, s in self._out.items():
            # linger: what was sent still reaches live peers; a dead one gets nothing
            s.close(0 if peer in self.lost else None)
        self._inbox.close(0)

    # -- internals ---------------------------------------------------------------------
    def _decode(self, parts: list[zmq.Frame]) -> tuple[int, Any, list[zmq.Frame]] | None:
        try:
            version, src, key = msgpack.unpackb(parts[0].bytes, raw=False, use_list=False)
        except Exception:  # msgpack raises several unrelated types
            self.dropped += 1
            return None
        if version != MESH_VERSION or not isinstance(src, int) or not (
                0 <= src < self.world_size) or src == self.rank:
            self.dropped += 1
            return None
        return src, key, parts[1:]

    def _events(self) -> None:
        for mon, peer in self._mon.items():
            while mon.poll(0):
                event = parse_monitor_message(mon.recv_multipart())["event"]
                if event == zmq.EVENT_CONNECTED:
                    self._connected.add(peer)
                elif peer in self._connected and peer not in self.lost:
                    self.lost[peer] = time.monotonic()


__all__ = ["BYE", "MESH_VERSION", "Mesh", "reachable_host"]
