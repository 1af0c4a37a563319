"""MachineNode: one machine of a run — its actors and its data-plane socket.

What the launcher (or a test) does per machine:

    node = MachineNode(plan, machine_id=1, unit="thread", run_id="ab12",
                       on_deliver=lambda task, piece_id, arrays: ...)
    addr = node.bind("127.0.0.1")          # "tcp://127.0.0.1:PORT" (+ unit addresses)
    node.connect({0: addr0, 1: addr1})     # every machine's data-plane address
    node.start()                           # process units: spawned here, waits until built
    node.command(task_id, "start", 10)     # CMD start|feed|close|stop to any task (routed)
    node.push_feed(task_id, {"out": arr})  # one piece for an input task (routed, with data)
    node.wait_exited(timeout=60)           # every local actor exited; raises the run's error
    node.close()                           # stop, close sockets, unlink shared memory

``plan`` is the whole plan or ``plan.for_machine(i)`` (routing in ``ctrl["routing"]``,
remote inputs in ``ctrl["remote_descs"]``).  ``unit`` picks how local units run, from a
registry: ``"thread"`` (one thread per thrd_id, this process) or ``"process"`` (one process
per thrd_id, regsts in shared memory).  ``on_deliver(task, piece_id, arrays)`` receives
output pieces of output tasks on this machine; it is called as ``on_deliver(None, -1, {})``
when the node fails, to wake a waiting client.  ``bind`` also accepts a full address of any
registered scheme (``inproc://``, ``ipc://``, ``tcp://``).
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Mapping

import numpy as np

from actorflow.actors import unit_wire as uw
from actorflow.actors.coalesce import unpack
from actorflow.actors.hosting import (
    Deliver,
    DeliverBatch,
    HostingFactory,
    Recorder,
    UnitHosting,
)
from actorflow.actors.inbound import Inbound
from actorflow.actors.machine_view import MachineView
from actorflow.actors.routing import Router, split_address
from actorflow.actors.unit_loop import serve
from actorflow.errors import (
    ActorflowError,
    InternalError,
    MalformedMessage,
    TransportError,
    WaitTimeout,
)
from actorflow.plan.model import Plan, Task
from actorflow.protocol.messages import Msg, cmd
from actorflow.registry import Registry
from actorflow.transport.comm import Listener, Message, listen
from actorflow.transport.outbox import Outbox
from actorflow.transport.registry import tcp_address
from actorflow.transport.security import Security


def _builtin_unit_kinds() -> None:
    from actorflow.actors.process_hosting import ProcessHosting
    from actorflow.actors.thread_hosting import ThreadHosting

    register_unit_kind("thread", ThreadHosting)
    register_unit_kind("process", ProcessHosting)



# how a node runs its units, by name (``--unit``): factory(node) -> UnitHosting
UNIT_KINDS: Registry[HostingFactory] = Registry("unit kind", loader=_builtin_unit_kinds)


def register_unit_kind(name: str, factory: HostingFactory) -> HostingFactory:
    """``factory(node)`` builds the object that hosts the node's units (see ThreadHosting)."""
    return UNIT_KINDS.register(name, factory)


def unit_kinds() -> list[str]:
    return UNIT_KINDS.names()


class MachineNode:
    """One machine's actors (on thread or process units) plus its data-plane socket."""

    def __init__(self, plan: Plan, machine_id: int, unit: str = "thread",
                 run_id: str | None = None, recorder: Recorder | None = None,
                 on_deliver: Deliver | None = None, timeout: float = 30.0,
                 security: Security | None = None,
                 on_batch: DeliverBatch | None = None) -> None:
        """``security``: how every socket of this machine authenticates (transport's hook).
        ``on_batch(task, piece_ids, arrays)``: output pieces in batches (arrays of shape
        ``(n, *blob)``, read-only and valid during the call); instead of ``on_deliver``."""
        make_hosting = UNIT_KINDS.get(unit)
        self.view = MachineView(plan, machine_id)
        self.plan = plan
        self.machine_id = machine_id
        self.unit = unit
        self.run_id = run_id or secrets.token_hex(4)
        self.recorder = recorder
        self.on_deliver = on_deliver
        self.on_batch = on_batch
        self.timeout = timeout
        self.name = f"machine {machine_id}"
        self.address: str | None = None
        self.machine_addrs: dict[int, str] = {}
        self._error: BaseException | None = None
        self._lock = threading.Lock()
        self.security = security
        self._inbox: Listener | None = None
        self._rx: threading.Thread | None = None
        self._rx_stop = threading.Event()
        self._closed = False
        self.outbox = Outbox(self.name, security=security)
        self.hosting: UnitHosting = make_hosting(self)
        self.router: Router = self.hosting.router
        mid = machine_id
        self.inbound = Inbound(
            self.name, self.view.routing, self.view.descs,
            hosted=lambda t: self.view.routing.get(t, (None,))[0] == mid,
            buffers=self._receive_slots)

    # -- wiring ------------------------------------------------------------------------
    def bind(self, host: str = "127.0.0.1", address: str | None = None) -> str:
        """Bind the data-plane socket (tcp on ``host``, port 0) and start receiving.

        Returns this machine's data-plane address for ``connect`` on every machine: the
        node's address, followed with process units by each unit's own address
        (``routing.compose_address``) so that peers reach unit processes without a relay.
        ``host`` is advertised as is: give an address the other machines can reach (the
        launcher picks the interface that routes to the master), not ``0.0.0.0``.
        """
        if self._inbox is not None:
            return self.address  # type: ignore[return-value]
        inbox = listen(address or tcp_address(host, 0), security=self.security,
                       name=f"{self.name} data plane")
        try:
            for extra in self.hosting.extra_binds():
                inbox.also_listen(extra)
        except BaseException:
            inbox.close()
            raise
        self._inbox = inbox
        self.address = inbox.address
        self._rx = threading.Thread(target=self._rx_main, daemon=True,
                                    name=f"actorflow-m{self.machine_id}-rx")
        self._rx.start()
        self.address = self.hosting.on_bind(self.address)  # may add unit addresses
        return self.address

    def connect(self, addrs: Mapping[int, str]) -> None:
        """Every machine's data-plane address (``{machine_id: address}``)."""
        addrs = {int(k): v for k, v in addrs.items()}
        needed = {m for m, _ in self.view.routing.values()} - {self.machine_id}
        missing = needed - set(addrs)
        if missing:
            raise TransportError(f"{self.name}: connect() lacks addresses of machines "
                                 f"{sorted(missing)}")
        self.machine_addrs.update(addrs)
        self.router.set_machine_addrs(addrs)
        for m in needed:
            node, units = split_address(addrs[m])
            for a in (node, *units.values()):
                self.outbox.connect(a)

    def start(self) -> None:
        if self._inbox is None:
            self.bind()
        self.hosting.start()

    # -- driving -----------------------------------------------------------------------
    def command(self, task_id: int, name: str, arg: int | None = None) -> None:
        """Send ``CMD name`` to a task of any machine."""
        self._check()
        self._route_cmd(cmd(task_id, name, arg), [])

    def push_feed(self, task_id: int, arrays: Mapping[str, np.ndarray]) -> None:
        """One piece for input task ``task_id`` (on any machine)."""
        self._check()
        if self.view.routing.get(task_id, (None,))[0] == self.machine_id:
            self.hosting.push_feed(task_id, dict(arrays))
        else:
            self._route_cmd(cmd(task_id, "feed"), list(arrays.items()))

    def _route_cmd(self, msg: Msg, arrays: list) -> None:
        if msg.dst not in self.view.routing:
            raise TransportError(f"{self.name}: no task {msg.dst} in the plan's routing table")
        machine = self.view.routing[msg.dst][0]
        if machine == self.machine_id:
            self.hosting.command(msg)
        else:
            addr, _ = self.router.where(msg.dst)
            self.router.send_to(addr, uw.MSG, msg.header(), arrays)

    def delivered(self, task: Task, piece_ids: list[int], arrays: dict) -> None:
        """A batch of output pieces from a unit (``arrays``: views, valid during the call)."""
        if self.on_batch is not None:
            self.on_batch(task, piece_ids, arrays)
        elif self.on_deliver is not None:
            for i, p in enumerate(piece_ids):
                self.on_deliver(task, int(p), {k: a[i].copy() for k, a in arrays.items()})

    def flush_outputs(self) -> None:
        """Send output pieces that wait in a thread unit's batch (the caller's idle tick)."""
        self.hosting.flush_outputs()

    # -- state -------------------------------------------------------------------------
    @property
    def error(self) -> BaseException | None:
        return self._error or self.hosting.error

    def fail(self, error: BaseException) -> None:
        """Stop this machine's units with ``error`` (the first error wins) and wake the client."""
        with self._lock:
            first = self._error is None and self.hosting.error is None
            if first:
                self._error = error
        if first:
            self.hosting.stop(error)
            if self.on_deliver is not None:
                self.on_deliver(None, -1, {})

    def wait_exited(self, timeout: float | None = None) -> None:
        """Wait until every actor of this machine exited; raise the run's error if any."""
        timeout = self.timeout if timeout is None else timeout
        if not self.hosting.wait(timeout):
            raise WaitTimeout(f"{self.name}: waited {timeout:.1f}s for every actor to exit; "
                              f"still running: {self.describe_live()}")
        if self.error is not None:
            raise self.error

    def exited(self) -> bool:
        return self.hosting.wait(0)

    def describe_live(self) -> str:
        return self.hosting.describe_live()

    def actor_states(self) -> list[dict]:
        """Every local actor's ``blocked_on()`` (watchdog, trace dumps); process units are
        asked over their status sockets."""
        return self.hosting.actor_states()

    def close(self, timeout: float = 5.0) -> None:
        """Stop everything this node started; safe to call twice and after a failure."""
        if self._closed:
            return
        self._closed = True
        failed = self.error is not None or not self.hosting.wait(0)
        try:
            self.hosting.close(timeout)
        finally:
            self._rx_stop.set()
            if self._rx is not None:
                self._rx.join(timeout)
            if self._inbox is not None:
                self._inbox.close()
            self.outbox.close(linger_ms=0 if failed else 2000)

    def _check(self) -> None:
        if self._closed:
            raise TransportError(f"{self.name}: node is closed")
        if self.error is not None:
            raise self.error

    # -- receiving ---------------------------------------------------------------------
    def _receive_slots(self, desc_id: int) -> list | None:
        """Where a remote READY's blobs land (thread units: runtime memory; process: shm)."""
        owner = getattr(self.hosting, "arena", None) or getattr(self.hosting, "runtime", None)
        memory = getattr(owner, "memory", None)
        return memory.get(desc_id) if memory is not None else None

    def _malformed(self, error: ActorflowError) -> None:
        """Dropped and counted (``Inbound`` logged it); with the run's key only the run's own
        processes can send, so a malformed message is a bug to stop on, naming its sender."""
        if self.inbound.strict:
            self.fail(error)

    def _rx_main(self) -> None:
        """The node's receiver: the unit loop's ``serve`` over the machine's listener --
        actor messages from other machines are landed and passed to their unit, the unit
        processes' reports go to the hosting."""
        serve(self._receive, self._handle, lambda: not self._rx_stop.is_set())

    def _receive(self, timeout: float) -> Message | None:
        inbox = self._inbox
        assert inbox is not None
        try:
            return inbox.recv(timeout)
        except MalformedMessage as e:  # undecodable or over the limits: drop it
            self._malformed(self.inbound.reject(str(e)))
        except TransportError as e:  # the socket itself failed (or was closed)
            if not self._rx_stop.is_set():
                self.fail(e)
            self._rx_stop.set()
        return None

    def _handle(self, m: Message) -> None:
        """Validate a received message (``actors/inbound.py``) before it is landed."""
        if not isinstance(m.kind, int) or not uw.MSG <= m.kind <= uw.BATCH:
            self._malformed(self.inbound.reject(f"message kind {m.kind!r:.20}"))
            return
        rx = getattr(self.hosting, "native_rx", None)  # (a hosting without one: none)
        if rx is not None and (m.kind == uw.MSG or m.kind == uw.BATCH):
            try:  # native units' messages, all checked in C (else the Python way below)
                if rx.take(m.kind, m.body, m.metas, m.frames):
                    return
            except ActorflowError as e:
                self.fail(e)
                return
        if m.kind == uw.BATCH:  # a thread unit's messages of one loop turn, in order
            try:
                subs = list(unpack(m, self.name))
            except MalformedMessage as e:
                self._malformed(e)
                return
            for sub in subs:
                self._handle(sub)
            return
        try:
            if m.kind == uw.MSG:
                try:
                    self.inbound.check(m.body, m.metas, m.frames, _claimed(m.body))
                except MalformedMessage as e:
                    self._malformed(e)
                    return
                self.hosting.incoming(m)
            else:  # only this machine's own unit processes send these
                try:
                    self.hosting.unit_message(m)
                except Exception as e:  # a unit report that is not one: never a crash
                    self._malformed(self.inbound.reject(
                        f"{uw.kind_name(m.kind)} message rejected: {e}"))
        except MalformedMessage as e:
            self._malformed(e)
        except ActorflowError as e:
            self.fail(e)
        except Exception as e:  # a bug: still fail the run loudly
            err = InternalError(f"{self.name}: receiver crashed: {type(e).__name__}: {e}")
            err.__cause__ = e
            self.fail(err)


def _claimed(body: object) -> str:
    """How to name the sender of a pull socket's message: the task it claims to be."""
    src = body[1] if isinstance(body, list) and len(body) > 1 else "?"
    return f"claiming task {src!r:.20}"
