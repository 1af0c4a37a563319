"""One process unit: the actors of one ``(machine, thrd)`` in their own process.

Started by the node (actors/process_hosting.py) as ``python -m
actorflow.actors.process_unit`` with a msgpack config on stdin (the plan as plan-file bytes:
no pickle).  The unit attaches to the node's shared-memory regsts, binds its own ``ipc://``
inbox and runs one loop on its main thread: messages of its own actors go through the local
deque; others arrive on the socket (only slot numbers: the data is already in shared memory).
It reports to the node: HELLO when built, DELIVER for output pieces, ERROR (a KernelError
as ``to_dict``), DONE when every actor exited.  It dies with the node (PR_SET_PDEATHSIG) and
ignores SIGINT (the node stops it).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time
import traceback
from typing import Any

import msgpack

from actorflow.actors import native_sockets
from actorflow.actors import unit_wire as uw
from actorflow.actors.coalesce import land_batch
from actorflow.actors.delivery import Batcher
from actorflow.actors.inbound import Inbound
from actorflow.actors.landing import land
from actorflow.actors.machine_view import MachineView
from actorflow.actors.memory import SharedDeviceAllocator, ShmAllocator
from actorflow.actors.native_process import run_native
from actorflow.actors.native_sockets import NativeSender
from actorflow.actors.routing import Router
from actorflow.actors.runtime import MachineRuntime
from actorflow.actors.unit_loop import run_unit
from actorflow.actors.unit_rings import UnitRings
from actorflow.actors.unit_status import StatusResponder
from actorflow.errors import (
    ActorflowError,
    KernelError,
    MalformedMessage,
    ProtocolError,
    report_thread_errors,
)
from actorflow.plan.io import plan_from_bytes
from actorflow.plan.model import Task
from actorflow.protocol.messages import Msg
from actorflow.trace.recorder import Recorder
from actorflow.transport.auth import ClusterKey, use_key
from actorflow.transport.comm import Message, listen
from actorflow.transport.outbox import Outbox
from actorflow.transport.registry import shutdown as shutdown_transport

CONFIG_VERSION = 1
# ms the last reports (output batches, DONE) may take to leave once the unit is done: they
# are zero-copy frames, read by libzmq's I/O thread after ``send`` returned
FLUSH_LINGER_MS = 30_000
_DROPPED = uw.DROPPED  # _recv: a message the transport rejected and this unit dropped
Stopped = uw.Stopped  # the node told this unit to stop


class ProcessUnit:
    def __init__(self, cfg: dict[str, Any]) -> None:
        self.machine_id = mid = int(cfg["machine_id"])
        self.thrd_id = tid = int(cfg["thrd_id"])
        self.name = f"machine {mid} unit {tid}"
        self.node_addr = cfg["node_addr"]
        self.token = bytes(cfg["token"])  # the node's: control messages carry it (unit_wire)
        self.outbox = Outbox(self.name)
        plan = plan_from_bytes(cfg["plan"], f"<{self.name} config>")
        view = MachineView(plan, mid)
        hosted = [t.task_id for t in plan.tasks if (t.machine_id, t.thrd_id) == (mid, tid)]
        self.alloc = SharedDeviceAllocator(ShmAllocator(cfg["run_id"], mid), cfg["run_id"], mid,
                                           hosted)
        # --trace: this process records its own file; otherwise the always-on flight ring
        self.recorder = (Recorder.from_config(cfg.get("trace"), plan, tag=f"m{mid}-t{tid}")
                         or Recorder(plan, tag=f"m{mid}-t{tid}"))
        self.rt = rt = MachineRuntime(plan, [mid], allocator=self.alloc,
                                      units=[(mid, tid)], producer_of=view.producer_of,
                                      recorder=self.recorder,
                                      # the loop runs in the compiled core over the rings
                                      # (native_process.py) when the node made them
                                      native_loops=bool(cfg.get("rings")))
        # output pieces go to the node in batches: one copy out of the regst, then frames
        self.batcher = rt.batcher = Batcher(self._deliver)
        for t in rt.tasks:  # regsts produced by other units / remote receive buffers
            for i in t.consumed_ids():
                if i not in rt.memory:
                    rt.memory[i] = self.alloc.allocate(view.descs[i])
        rt.pin_copy_buffers()
        unit_addrs = {(int(m), int(t)): a for m, t, a in cfg["unit_addrs"]}
        # messages to peer units: records through shared-memory rings (actors/unit_rings.py)
        # when the node made them, else one BATCH per peer per loop turn (actors/coalesce.py);
        # to other machines through the compiled core's libzmq driver when it runs
        self.rings = UnitRings(cfg["rings"], tid) if cfg.get("rings") else None
        links = {unit_addrs[(mid, p)]: self.rings.batch(p, f"machine {mid} unit {p}")
                 for p in self.rings.peers} if self.rings is not None else None
        self.native = NativeSender() if native_sockets.unavailable() is None else None
        self.router = Router(mid, view.routing, self.outbox, rt.memory, {}, unit_addrs,
                             coalesce=True, links=links, native=self.native)
        rt.remote_send = self.router.send
        rt.coalesced = self.router
        self.unit = next(iter(rt.units.values())) if rt.units else None
        self.inbox = listen(unit_addrs[(mid, tid)], name=f"{self.name} inbox")
        own = self.inbox.address
        # the address other machines reach this unit at directly (None: through the node)
        direct = cfg.get("direct")
        self.direct = (own if direct == "own" else self.inbox.also_listen(direct) if direct
                       else None)
        self.early: list[Message] = []  # messages that came before CONNECT
        self.inbound = Inbound(self.name, view.routing, view.descs,
                               hosted=lambda t: view.routing.get(t) == (mid, tid),
                               buffers=rt.memory.get)
        # the node's STATUS queries, answered by a helper thread even while a kernel runs
        ctl = cfg.get("ctl_addr")
        self.status = StatusResponder(
            ctl, self.name, rt.actor_states,
            lambda qid, states: self.report(uw.STATES, [tid, states, qid])) if ctl else None

    def wait_connect(self, timeout: float = 120.0) -> None:
        """Take every machine's address from the node's CONNECT; keep anything else."""
        ppid, deadline = os.getppid(), time.monotonic() + timeout
        while time.monotonic() < deadline and os.getppid() == ppid:
            m = self._recv(0.2)
            if m is None or m is _DROPPED:
                continue
            if m.kind == uw.CONNECT:
                ok, body = self._control(m)
                if not ok:
                    continue
                try:
                    addrs = {int(k): str(v) for k, v in body.items()}
                except (AttributeError, TypeError, ValueError) as e:
                    raise ProtocolError(f"{self.name}: CONNECT from the node is not a map of "
                                        f"machine addresses: {body!r:.80}") from e
                self.router.set_machine_addrs(addrs)
                native = self.unit is not None and self.unit.native and self.rings is not None
                self.report(uw.CONNECTED, [self.thrd_id, "native" if native else "python"])
                return
            if m.kind == uw.STOP:
                if self._control(m)[0]:
                    raise Stopped
                continue
            self.early.append(m)
        raise Stopped

    def _take(self, m: Message) -> list[Msg]:
        """A wire message -> the actor messages to handle now, in order."""
        if m.kind == uw.BATCH:
            try:
                return land_batch(m, self._land, self.name, self._check_head)
            except MalformedMessage as e:  # a malformed batch: dropped, or with the key an error
                err = self.inbound.reject(str(e))
                if self.inbound.strict:
                    raise err from e
                return []
        if m.kind == uw.STOP:
            if self._control(m)[0]:
                raise Stopped
            return []
        if m.kind != uw.MSG:  # units take only actor messages (and STOP)
            err = self.inbound.reject(f"message kind {m.kind!r:.20}")
            if self.inbound.strict:
                raise err
            return []
        msg = self._land(m)
        return [] if msg is None else [msg]

    def _control(self, m: Message) -> tuple[bool, Any]:
        """``(True, body)`` of a control message from the node; ``(False, None)`` for one
        without the node's token: dropped and counted, or with the run's key an error."""
        try:
            return True, uw.unseal(self.token, m.body, m.kind)
        except MalformedMessage as e:
            err = self.inbound.reject(str(e))
            if self.inbound.strict:
                raise err from e
            return False, None

    def _land(self, m: Message) -> Msg | None:
        """Validate (actors/inbound.py), then land: a malformed message is never landed."""
        if self._check(m) is None:
            return None
        return land(m, self.rt.memory, self.rt.push_feed, self.name)

    def _check(self, m: Message) -> Msg | None:
        """The validated actor message; a malformed one is dropped (None), or with the run's
        key (only the run's own processes can send) fails this unit naming its sender."""
        return self._check_head(m.body, m.metas, m.frames)

    def _check_head(self, body: Any, metas: list | None = None,
                    frames: list | tuple = ()) -> Msg | None:
        """``_check`` of one header (and blobs): also each entry of a BATCH."""
        try:
            src = body[1] if isinstance(body, list) and len(body) > 1 else "?"
            return self.inbound.check(body, metas, list(frames), f"claiming task {src!r:.20}")
        except MalformedMessage:
            if self.inbound.strict:
                raise
            return None

    def _recv(self, timeout: float) -> Any:
        """The next message, None on timeout, ``_DROPPED`` for one the transport rejected
        (undecodable, over the limits): counted, and with the run's key an error."""
        try:
            return self.inbox.recv(timeout)
        except MalformedMessage as e:
            err = self.inbound.reject(str(e))
            if self.inbound.strict:
                raise err from e
            return _DROPPED

    def report(self, kind: int, body: Any, arrays: list | tuple = ()) -> None:
        self.router.send_to(self.node_addr, kind, uw.seal(self.token, body), arrays)

    def _deliver(self, task: Task, piece_ids: list[int], arrays: dict) -> None:
        self.report(uw.DELIVER, [task.task_id, piece_ids], list(arrays.items()))

    def run(self) -> None:
        """Dispatch messages until every actor exited; raises ``Stopped`` on STOP."""
        unit = self.unit
        if unit is None:
            return
        early = [msg for m in self.early for msg in self._take(m)]
        self.early = []
        if unit.native and self.rings is not None:
            for msg in early:
                unit.put(msg)
            run_native(self)
            return
        if early:
            unit.push(early)
        run_unit(unit, _SocketSource(self))

    def wait_stop(self, limit: float = 60.0) -> None:
        """After an error: keep the process (and its sockets) until the node says stop."""
        ppid, deadline = os.getppid(), time.monotonic() + limit
        while time.monotonic() < deadline and os.getppid() == ppid:
            try:
                m = self.inbox.recv(0.2)
            except MalformedMessage:  # already failed: anything but STOP is ignored
                continue
            if m is not None and m.kind == uw.STOP:
                try:
                    uw.unseal(self.token, m.body, m.kind)
                except MalformedMessage:
                    continue  # not the node's
                return

    def dump_failure(self, body: dict) -> None:
        """The flight recorder and this unit's actor states, for ``trace why-stuck``."""
        err = str(body.get("message") or body.get("kernel", {}).get("error", ""))
        try:
            path = self.recorder.dump("failed", self.rt.actor_states(), err.splitlines()[0]
                                      if err else "")
            print(f"{self.name}: flight recorder dumped to {path}", file=sys.stderr)
        except (OSError, ValueError, TypeError) as e:
            print(f"{self.name}: could not write the flight dump: {e}", file=sys.stderr)

    def close(self, flush: bool) -> None:
        if self.status is not None:
            self.status.close()
        if self.rings is not None:
            self.rings.close()
        self.recorder.close()
        self.rt.close_streams()
        self.inbox.close()
        self.outbox.close(linger_ms=FLUSH_LINGER_MS if flush else 0)
        self.alloc.close()


class _SocketSource:
    """A process unit's messages: the records its peer units put in its rings (when it has
    them), its own inbox socket (other machines, its node), and the commands its runtime
    queued itself (a fed piece's CMD).  One wait covers rings and socket together; it wakes
    every ``WAIT`` seconds to check that the node is alive."""

    def __init__(self, pu: ProcessUnit) -> None:
        assert pu.unit is not None
        self.recv = pu._recv  # inbound validation (actors/inbound.py) before landing
        self.queue = pu.unit.inbox
        self.take_wire = pu._take
        self.check = pu._check
        self.check_head = pu._check_head
        self.inbound = pu.inbound
        self.ppid = os.getppid()
        self.rings = pu.rings
        self.routing = pu.inbound.routing
        self.mid = pu.machine_id
        if self.rings is not None:
            from actorflow._core import _zq

            self.wait_any = _zq.wait_any
            self.sockets = [_zq.ZqSocket(pu.inbox.handle, pu.inbox, pu.inbox.name)]

    def take(self, timeout: float) -> list[Msg]:
        """The commands queued here, then what the rings hold, then one wire message (a
        BATCH unpacked in order)."""
        out: list[Msg] = []
        q = self.queue
        while not q.empty():
            msg = q.get_nowait()
            if not isinstance(msg, Msg):
                raise Stopped
            out.append(msg)
        if self.rings is not None:
            self._from_rings(out)
            if not out and timeout > 0:
                rings, sockets = self.wait_any(self.rings.inbox, self.sockets, timeout)
                if rings:
                    self._from_rings(out)
                if not sockets:
                    return out
            timeout = 0.0
        m = self.recv(0.0 if out else timeout)
        if m is None or m is _DROPPED:
            return out
        if m.kind or m.metas:
            out.extend(self.take_wire(m))  # a feed takes its CMD's arrays; a BATCH unpacks
        else:
            msg = self.check(m)
            if msg is not None:
                out.append(msg)
        return out

    def _from_rings(self, out: list[Msg]) -> None:
        """Records from the rings, each checked like a wire message and against its ring:
        the sender task must live on the unit that writes that ring."""
        assert self.rings is not None
        for writer, header in self.rings.take():
            msg = self.check_head(header)
            if msg is None:
                continue
            if self.routing.get(msg.src) != (self.mid, writer):
                err = self.inbound.reject(
                    f"a record in the ring of unit {writer} claims sender task {msg.src}, "
                    "which that unit does not host", f"machine {self.mid} unit {writer}")
                if self.inbound.strict:
                    raise err
                continue
            out.append(msg)

    def idle(self) -> bool:
        if os.getppid() != self.ppid:
            raise Stopped  # the node is gone
        return True


def error_body(e: BaseException, where: str) -> dict:
    if isinstance(e, KernelError):
        return {"type": "KernelError", "kernel": e.to_dict()}
    name = type(e).__name__ if isinstance(e, ActorflowError) else "InternalError"
    text = str(e) if isinstance(e, ActorflowError) else f"{type(e).__name__}: {e}"
    return {"type": name, "message": f"{where}: {text}", "traceback": traceback.format_exc()}


def _die_with_parent() -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: the unit still exits when its parent pid changes


def main() -> int:
    """Run one unit; before the interpreter exits, wait until libzmq has sent what is queued.

    The output batches go to the node as zero-copy frames: pyzmq keeps each batch array
    alive only in its garbage collector's table, which its ``atexit`` hook clears.  Left to
    the interpreter's exit, a batch still queued (a busy or paused node) was freed while
    libzmq's I/O thread still read it: the node got malloc's free-list pointers in place of
    the first row's bytes, or the batch and DONE never left.  Terminating the contexts
    first waits (up to each socket's linger) until libzmq let go of every frame."""
    report_thread_errors("actorflow unit process")
    try:
        return _run()
    finally:
        shutdown_transport(FLUSH_LINGER_MS)


def _run() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)  # trace dumps are the worker's business
    _die_with_parent()
    cfg = msgpack.unpackb(sys.stdin.buffer.read(), raw=False, strict_map_key=False)
    if cfg.get("version") != CONFIG_VERSION:
        print(f"process unit: config version {cfg.get('version')!r}, expected "
              f"{CONFIG_VERSION}", file=sys.stderr)
        return 2
    where = f"machine {cfg['machine_id']} unit {cfg['thrd_id']}"
    unit: ProcessUnit | None = None
    try:
        if cfg.get("cluster_key"):  # the run's key: every socket of this process uses it
            use_key(ClusterKey.from_bytes(cfg["cluster_key"], f"{where} config"))
        unit = ProcessUnit(cfg)
        unit.report(uw.HELLO, [unit.thrd_id, os.getpid(), unit.direct])
        unit.wait_connect()
        unit.run()
        unit.report(uw.DONE, [unit.thrd_id])
        unit.close(flush=True)
        return 0
    except Stopped:
        if unit is not None:
            unit.close(flush=False)
        return 0
    except Exception as e:
        body = error_body(e, where)
        if unit is None:  # could not even build: tell the node through a fresh socket
            out = Outbox(where)
            out.send(cfg["node_addr"], uw.ERROR, uw.seal(bytes(cfg.get("token") or b""), body))
            out.close(linger_ms=2000)
            return 1
        unit.dump_failure(body)
        unit.report(uw.ERROR, body)
        unit.wait_stop()
        unit.close(flush=False)
        return 1


if __name__ == "__main__":
    sys.exit(main())
