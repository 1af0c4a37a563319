"""Where an actor message goes from this process, and what travels with it.

``Router`` maps a destination task to an address (task -> (machine, thrd) from the plan's
routing table -> the address of that machine, or of that unit process on this machine)
and decides what travels: a READY that leaves the machine carries its regst's blobs as
frames; inside a machine only slot numbers travel.  It sends through the transport's
``Outbox`` (one comm per peer), so messages of one actor pair stay FIFO.  Messages between
actors of one unit never get here (the unit keeps them local).  With ``coalesce=True`` (a
process unit) messages to other unit processes wait in a per-peer ``PeerBatch`` until the
unit loop calls ``flush()`` (actors/coalesce.py); messages to a node always go at once.
``links`` replaces the batch of a peer unit of this machine by one of the same shape that
goes through a shared-memory ring instead of a socket (actors/unit_rings.py); ``native``
sends the actor messages that use sockets through the compiled core's libzmq driver
(actors/native_sockets.py: a regst's frames without a copy, the GIL released in waits).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from actorflow.actors import unit_wire as uw
from actorflow.actors.coalesce import PeerBatch
from actorflow.errors import ProtocolError, TransportError
from actorflow.protocol.messages import READY, Msg
from actorflow.transport import codec
from actorflow.transport.comm import Comm
from actorflow.transport.outbox import Outbox


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
    with thread units: the node's own listener receives for all of them).
    ``memory``: regst desc id -> slots, to read blobs of a READY that leaves the machine.
    """

    def __init__(self, machine_id: int, routing: Mapping[int, tuple[int, int]],
                 outbox: Outbox, memory: Mapping[int, list[dict]],
                 machine_addrs: Mapping[int, str] | None = None,
                 unit_addrs: Mapping[tuple[int, int], str] | None = None,
                 coalesce: bool = False, links: Mapping[str, Any] | None = None,
                 native: Any = None, coalesce_nodes: bool = False) -> None:
        """``coalesce_nodes``: batch messages to other machines' nodes too (their receivers
        unpack a BATCH: thread units, whose loops flush before they sleep)."""
        self.machine_id = machine_id
        self.routing = dict(routing)
        self.outbox = outbox
        self.memory = memory
        self.machine_addrs: dict[int, str] = {}
        self.remote_units: dict[tuple[int, int], str] = {}
        self.unit_addrs: dict[tuple[int, int], str] = dict(unit_addrs or {})
        self._cache: dict[int, tuple[str, bool]] = {}
        # dst task -> (comm, crosses machines, its batch or None): one dict hit per send
        self._fast: dict[int, tuple[Comm | None, bool, Any]] = {}
        self.coalesce = coalesce
        self.coalesce_nodes = coalesce_nodes
        self.native = native
        self._batches: dict[str, Any] = dict(links or {})  # peer unit address -> its batch
        self._waiting: list[Any] = []  # batches holding messages, in first-use order
        self.set_machine_addrs(machine_addrs or {})

    def set_machine_addrs(self, addrs: Mapping[int, str]) -> None:
        for m, a in addrs.items():
            node, units = split_address(a)
            self.machine_addrs[int(m)] = node
            for t, ua in units.items():
                self.remote_units[(int(m), t)] = ua
        self.flush()
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
        cached comm of their destination and go out as one frame: this runs once per
        READY/ACK, so it avoids the per-message address lookups and frame lists.  With
        ``coalesce`` a message to a unit process joins that peer's batch instead.
        """
        fast = self._fast.get(msg.dst)
        if fast is None:
            fast = self._fast[msg.dst] = self._route(msg.dst)
        comm, remote, batch = fast
        if not remote or msg.type != READY:
            if batch is None:
                assert comm is not None  # only a ring link has no comm (and has a batch)
                if self.native is not None:
                    self.native.send(comm, [codec.encode_head(uw.MSG, msg.header())])
                else:
                    comm.send_head(codec.encode_head(uw.MSG, msg.header()))
                return
            if not batch.heads:
                self._waiting.append(batch)
            if batch.add(msg.header()):
                self._send_batch(batch)
            return
        slots = self.memory.get(msg.regst_desc_id)
        if slots is None:
            raise ProtocolError(f"machine {self.machine_id}: READY for regst desc "
                                f"{msg.regst_desc_id} which has no memory here")
        if batch is None:
            assert comm is not None
            if self.native is not None:
                self.native.send(comm, codec.encode(uw.MSG, msg.header(),
                                                    slots[msg.slot].items()))
            else:
                comm.send(uw.MSG, msg.header(), slots[msg.slot].items())
            return
        if not batch.heads:
            self._waiting.append(batch)
        if batch.add(msg.header(), list(slots[msg.slot].items())):
            self._send_batch(batch)

    def _route(self, dst: int) -> tuple[Comm | None, bool, Any]:
        addr, remote = self.where(dst)
        if self.coalesce and addr in self._batches and not remote:
            return None, remote, self._batches[addr]  # a ring link (or a batch made before)
        comm = self.outbox.comm(addr)
        if not self.coalesce or addr not in self._peer_units():
            return comm, remote, None
        batch = self._batches.get(addr)
        if batch is None:
            batch = self._batches[addr] = PeerBatch(comm, self.native)
        return comm, remote, batch

    def _peer_units(self) -> set[str]:
        """Addresses that take a BATCH: unit processes, and with ``coalesce_nodes`` the
        nodes of other machines."""
        peers = {*self.unit_addrs.values(), *self.remote_units.values()}
        if self.coalesce_nodes:
            peers.update(a for m, a in self.machine_addrs.items() if m != self.machine_id)
        return peers

    def _send_batch(self, batch: Any) -> None:
        self._waiting.remove(batch)
        batch.send()

    @property
    def pending(self) -> bool:
        """True while coalesced messages wait for ``flush``."""
        return bool(self._waiting)

    def flush(self) -> None:
        """Send every waiting batch (one transport message per peer), oldest peer first."""
        waiting = self._waiting
        if waiting:
            self._waiting = []
            for b in waiting:
                b.send()

    def send_to(self, address: str, kind: int, body: Any,
                arrays: list[tuple[str, Any]] | tuple = ()) -> None:
        """A non-actor message (reports, orders, feeds) to an explicit address."""
        self.outbox.comm(address).send(kind, body, arrays)
