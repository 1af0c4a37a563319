"""A unit process's whole loop in the compiled core, over its rings (``_core/ring_loop.pxi``).

With the compiled core and the node's rings, a process unit on an inline CPU stream runs
like a native thread unit (``native_unit.py``), its messages coming from its rings instead
of an in-process inbox: records from peer unit processes are taken and checked in C
(``_core/ring_check.h``), records to them go into their rings from C, and the loop sleeps,
with the GIL released, in one poll on its doorbell and its socket.  ``ProcessShell`` is
what the loop calls back for what only Python does: receive from the socket (other
machines, the node's orders, fed pieces; checked and landed by the process unit, then put
in the core's inbox), send to other machines (coalesced, flushed before the loop sleeps),
report a refused record or a ring that stayed full, and check that the node is alive.
"""

from __future__ import annotations

import errno as errnos
import os
from typing import TYPE_CHECKING

from actorflow.actors import unit_wire as uw
from actorflow.actors.native_unit import NativeShell
from actorflow.actors.unit_rings import SEND_TIMEOUT
from actorflow.errors import TransportError, WaitTimeout
from actorflow.protocol.messages import Msg

if TYPE_CHECKING:
    from actorflow.actors.process_unit import ProcessUnit


class ProcessShell(NativeShell):
    """What the native loop of a unit process calls back (always with the GIL)."""

    def __init__(self, pu: ProcessUnit) -> None:
        assert pu.unit is not None and pu.rings is not None
        super().__init__(pu.unit)
        self.pu = pu
        self.core = pu.unit.core
        self.ppid = os.getppid()

    def pump(self) -> None:
        """Take every message waiting on the socket into the core's inbox (checked, landed;
        a STOP from the node raises ``Stopped``)."""
        pu, put = self.pu, self.unit.put
        while True:
            m = pu._recv(0.0)
            if m is None:
                return
            if m is uw.DROPPED:
                continue
            if m.kind or m.metas:
                for msg in pu._take(m):
                    put(msg)
            else:
                one = pu._check(m)
                if one is not None:
                    put(one)

    def flush(self) -> None:
        self.unit.flush()

    def idle(self) -> bool:
        if os.getppid() != self.ppid:
            raise uw.Stopped  # the node is gone
        return super().idle()

    def reject(self, why: str, writer: int) -> None:
        """A record from the ring of unit ``writer`` was refused: counted and logged, or,
        in an authenticated run, the unit fails naming it."""
        inbound = self.pu.inbound
        err = inbound.reject(why, f"machine {self.pu.machine_id} unit {writer}")
        if inbound.strict:
            raise err

    def ring_failed(self, msg: Msg, errno: int) -> None:
        pu = self.pu
        assert pu.rings is not None
        peer = pu.inbound.routing.get(msg.dst, (None, None))[1]
        outlet = pu.rings.outlets.get(peer) if peer is not None else None
        reader = (f"pid {outlet.consumer_pid}" if outlet is not None and outlet.consumer_pid
                  else "no reader")
        if errno == errnos.ETIMEDOUT:
            raise WaitTimeout(f"{pu.name}: waited {SEND_TIMEOUT:g} s for room in the ring "
                              f"into unit {peer} ({reader}) for {msg!r}")
        raise TransportError(f"{pu.name}: the ring into unit {peer} ({reader}) refused "
                             f"{msg!r}: {os.strerror(errno)}")

    def wait_failed(self, errno: int) -> None:
        raise TransportError(f"{self.pu.name}: waiting on its rings and socket failed: "
                             f"{os.strerror(errno)}")


def run_native(pu: ProcessUnit) -> None:
    """Run ``pu``'s unit in the compiled core over its rings until every actor exited."""
    from actorflow._core import _rings, unit_core
    from actorflow.transport.registry import libzmq_file

    unit, rings = pu.unit, pu.rings
    assert unit is not None and rings is not None
    mid, me = pu.machine_id, pu.thrd_id
    routing = pu.inbound.routing
    units = {t: thrd for t, (m, thrd) in routing.items() if m == mid}
    descs = [(d.regst_desc_id, d.producer_task_id, d.register_num, d.consumer_task_ids)
             for d in pu.inbound.descs.values()]
    check = _rings.RingCheck(units, descs, me, rings.peers)
    outlet_of = {t: rings.outlets[thrd] for t, thrd in units.items() if thrd != me}
    links = unit_core.RingLinks(rings.inbox, check, outlet_of, pu.inbox.handle, pu.inbox,
                                libzmq_file())
    unit.plan()
    assert isinstance(unit.core, unit_core.NativeUnitCore)  # unit.native says so
    unit_core.run_process(unit.core, ProcessShell(pu), pu.rt.native_router(), links,
                          int(SEND_TIMEOUT * 1e9))
