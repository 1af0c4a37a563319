"""The actor message bus: route a message by its destination task to a socket.

``Router`` decides *where* (dst task -> (machine, thrd) from the plan's routing table ->
the address of that machine, or of that unit process on this machine) and *what travels*
(a READY that crosses machines carries the regst's blobs as frames; inside a machine only
slot numbers travel).  ``Outbox`` owns one PUSH socket per peer address.  An actor always
sends to a given peer through the same socket, so messages of one actor pair stay FIFO.
Messages between actors of one unit never get here (the runtime keeps them local).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import zmq

from actorflow.errors import ProtocolError, TransportError
from actorflow.protocol.messages import READY, Msg
from actorflow.transport import codec
from actorflow.transport.registry import connect, context


class Outbox:
    """PUSH sockets to peers, created on first use; each used under its own lock."""

    def __init__(self, name: str = "") -> None:
        self.name = name
        self._ctx = context()
        self._socks: dict[str, tuple[zmq.Socket, threading.Lock]] = {}
        self._lock = threading.Lock()
        self.closed = False

    def _sock(self, address: str) -> tuple[zmq.Socket, threading.Lock]:
        entry = self._socks.get(address)
        if entry is None:
            with self._lock:
                if self.closed:
                    raise TransportError(f"{self.name}: outbox closed; cannot send to {address}")
                entry = self._socks.get(address)
                if entry is None:
                    s = self._ctx.socket(zmq.PUSH)
                    s.setsockopt(zmq.SNDHWM, 0)  # the protocol bounds what is in flight
                    s.setsockopt(zmq.LINGER, 2000)
                    connect(s, address)
                    entry = (s, threading.Lock())
                    self._socks[address] = entry
        return entry

    def connect(self, address: str) -> None:
        """Open the socket to ``address`` now (so the first message does not pay for it)."""
        self._sock(address)

    def entry(self, address: str) -> tuple[zmq.Socket, threading.Lock]:
        """The socket to ``address`` and its lock, for callers that cache them (hot path)."""
        return self._sock(address)

    def send(self, address: str, frames: list) -> None:
        s, lock = self._sock(address)
        with lock:
            try:
                codec.send(s, frames)
            except zmq.ZMQError as e:
                raise TransportError(f"{self.name}: send to {address} failed: {e}") from e

    def close(self, linger_ms: int = 2000) -> None:
        """Close every socket; ``linger_ms`` bounds how long unsent messages may flush."""
        with self._lock:
            self.closed = True
            socks, self._socks = self._socks, {}
        for s, lock in socks.values():
            with lock:
                s.close(linger=linger_ms)


def compose_address(node: str, units: Mapping[int, str] | None = None) -> str:
    """A machine's data-plane address: the node's, then ``thrd=address`` of every unit
    process that receives directly (``"tcp://h:5000 1=tcp://h:5001 2=tcp://h:5002"``)."""
    return " ".join([node, *(f"{t}={a}" for t, a in sorted((units or {}).items()))])


def split_address(address: str) -> tuple[str, dict[int, str]]:
    """Inverse of ``compose_address``: (node address, {thrd: unit address})."""
    node, *parts = address.split()
    units = {}
    for p in parts:
        t, sep, a = p.partition("=")
        if not sep or not t.isdigit():
            raise TransportError(f"data-plane address {address!r}: bad unit part {p!r} "
                                 "(expected THRD=ADDRESS)")
        units[int(t)] = a
    return node, units


class Router:
    """Where a message for a task goes from this process, and with which frames.

    ``routing``: task -> (machine, thrd); ``machine_addrs``: machine -> data-plane address
    (``compose_address``: a unit listed there gets its messages directly, others via the node);
    ``unit_addrs``: (machine, thrd) -> address of unit processes of *this* machine (empty
    with thread units: the node's own socket receives for all of them).
    ``memory``: regst desc id -> slots, to read blobs of a READY that leaves the machine.
    """

    def __init__(self, machine_id: int, routing: Mapping[int, tuple[int, int]],
                 outbox: Outbox, memory: Mapping[int, list[dict]],
                 machine_addrs: Mapping[int, str] | None = None,
                 unit_addrs: Mapping[tuple[int, int], str] | None = None) -> None:
        self.machine_id = machine_id
        self.routing = dict(routing)
        self.outbox = outbox
        self.memory = memory
        self.machine_addrs: dict[int, str] = {}
        self.remote_units: dict[tuple[int, int], str] = {}
        self.unit_addrs: dict[tuple[int, int], str] = dict(unit_addrs or {})
        self._cache: dict[int, tuple[str, bool]] = {}
        # dst task -> (socket, lock) of header-only messages: one dict hit per send
        self._fast: dict[int, tuple[zmq.Socket, threading.Lock, bool]] = {}
        self.set_machine_addrs(machine_addrs or {})

    def set_machine_addrs(self, addrs: Mapping[int, str]) -> None:
        for m, a in addrs.items():
            node, units = split_address(a)
            self.machine_addrs[int(m)] = node
            for t, ua in units.items():
                self.remote_units[(int(m), t)] = ua
        self._cache.clear()
        self._fast.clear()

    def where(self, task_id: int) -> tuple[str, bool]:
        """(address, crosses_machines) for messages to ``task_id``."""
        hit = self._cache.get(task_id)
        if hit is not None:
            return hit
        try:
            machine, thrd = self.routing[task_id]
        except KeyError:
            raise ProtocolError(f"machine {self.machine_id}: no route to task {task_id} "
                                "(not in the plan's routing table)") from None
        if machine == self.machine_id:
            addr = self.unit_addrs.get((machine, thrd))
            if addr is None:
                raise ProtocolError(f"machine {self.machine_id}: task {task_id} is on this "
                                    f"machine (thrd {thrd}) but no unit hosts it")
            hit = (addr, False)
        else:
            addr = self.remote_units.get((machine, thrd)) or self.machine_addrs.get(machine)
            if addr is None:
                raise TransportError(f"machine {self.machine_id}: no address for machine "
                                     f"{machine} (task {task_id}); call connect() with every "
                                     "machine's address first")
            hit = (addr, True)
        self._cache[task_id] = hit
        return hit

    def send(self, msg: Msg) -> None:
        """Send an actor message; a READY leaving the machine carries its regst's blobs.

        Header-only messages (all of them inside a machine, ACK/EORD/CMD across) take the
        cached socket of their destination and go out as one frame: this runs once per
        READY/ACK, so it avoids the per-message address lookups and frame lists.
        """
        fast = self._fast.get(msg.dst)
        if fast is not None and (msg.type != READY or not fast[2]):
            sock, lock, _ = fast
            head = codec.encode_head(codec.MSG, msg.header())
            with lock:
                try:
                    sock.send(head)
                except zmq.ZMQError as e:
                    raise TransportError(f"{self.outbox.name}: send of {msg!r} failed: "
                                         f"{e}") from e
            return
        addr, remote = self.where(msg.dst)
        if fast is None:
            self._fast[msg.dst] = (*self.outbox.entry(addr), remote)
        arrays: list = []
        if remote and msg.type == READY:
            slots = self.memory.get(msg.regst_desc_id)
            if slots is None:
                raise ProtocolError(f"machine {self.machine_id}: READY for regst desc "
                                    f"{msg.regst_desc_id} which has no memory here")
            arrays = list(slots[msg.slot].items())
        self.outbox.send(addr, codec.encode(codec.MSG, msg.header(), arrays))

    def send_to(self, address: str, kind: int, body: Any,
                arrays: list[tuple[str, Any]] | tuple = ()) -> None:
        """A non-actor message (deliveries, errors, feeds) to an explicit address."""
        self.outbox.send(address, codec.encode(kind, body, arrays))
