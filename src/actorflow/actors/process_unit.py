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
import zmq

from actorflow.actors.runtime import MachineRuntime
from actorflow.actors.unit_status import StatusResponder
from actorflow.errors import ActorflowError, KernelError, ProtocolError
from actorflow.plan.io import plan_from_bytes
from actorflow.plan.model import Task
from actorflow.protocol.messages import CMD, Msg
from actorflow.protocol.state import EXITED
from actorflow.trace.recorder import Recorder
from actorflow.transport import codec
from actorflow.transport.bus import Outbox, Router
from actorflow.transport.registry import bind, context
from actorflow.transport.shm import ShmAttach

CONFIG_VERSION = 1


class Stopped(Exception):
    """The node told this unit to stop."""


class ProcessUnit:
    def __init__(self, cfg: dict[str, Any]) -> None:
        from actorflow.actors.node import MachineView

        self.machine_id = mid = int(cfg["machine_id"])
        self.thrd_id = tid = int(cfg["thrd_id"])
        self.name = f"machine {mid} unit {tid}"
        self.node_addr = cfg["node_addr"]
        self.outbox = Outbox(self.name)
        plan = plan_from_bytes(cfg["plan"], f"<{self.name} config>")
        view = MachineView(plan, mid)
        self.alloc = ShmAttach(cfg["run_id"], mid)
        # --trace: this process records its own file; otherwise the always-on flight ring
        self.recorder = (Recorder.from_config(cfg.get("trace"), plan, tag=f"m{mid}-t{tid}")
                         or Recorder(plan, tag=f"m{mid}-t{tid}"))
        self.rt = rt = MachineRuntime(plan, [mid], allocator=self.alloc,
                                      on_deliver=self._deliver, units=[(mid, tid)],
                                      producer_of=view.producer_of, recorder=self.recorder)
        for t in rt.tasks:  # regsts produced by other units / remote receive buffers
            for i in t.consumed_ids():
                if i not in rt.memory:
                    rt.memory[i] = self.alloc.allocate(view.descs[i])
        unit_addrs = {(int(m), int(t)): a for m, t, a in cfg["unit_addrs"]}
        self.router = Router(mid, view.routing, self.outbox, rt.memory, {}, unit_addrs)
        rt.remote_send = self.router.send
        self.unit = next(iter(rt.units.values())) if rt.units else None
        self.sock = context().socket(zmq.PULL)
        self.sock.setsockopt(zmq.RCVHWM, 0)
        self.sock.setsockopt(zmq.LINGER, 0)
        own = bind(self.sock, unit_addrs[(mid, tid)])
        # the address other machines reach this unit at directly (None: through the node)
        direct = cfg.get("direct")
        self.direct = own if direct == "own" else bind(self.sock, direct) if direct else None
        self.early: list[tuple] = []  # messages that came before CONNECT
        # the node's STATUS queries, answered by a helper thread even while a kernel runs
        ctl = cfg.get("ctl_addr")
        self.status = StatusResponder(
            ctl, self.name, rt.actor_states,
            lambda qid, states: self.report(codec.STATES, [tid, states, qid])) if ctl else None

    def wait_connect(self, timeout: float = 120.0) -> None:
        """Take every machine's address from the node's CONNECT; keep anything else."""
        ppid, deadline = os.getppid(), time.monotonic() + timeout
        while time.monotonic() < deadline and os.getppid() == ppid:
            if not self.sock.poll(200):
                continue
            got = codec.recv(self.sock)
            if got[0] == codec.CONNECT:
                self.router.set_machine_addrs({int(k): v for k, v in got[1].items()})
                self.report(codec.CONNECTED, [self.thrd_id])
                return
            if got[0] == codec.STOP:
                raise Stopped
            self.early.append(got)
        raise Stopped

    def _take(self, kind: int, body: Any, metas: list | None, frames: list) -> Msg | None:
        """A wire message -> the actor message to handle now (None: nothing to handle)."""
        if kind == codec.STOP:
            raise Stopped
        if kind == codec.STATUS:  # the node's hang report asks why we wait
            live = [h.state.blocked_on() for h in self.unit.actors.values()
                    if h.state.status != EXITED] if self.unit is not None else []
            self.report(codec.STATES, [self.thrd_id, live])
            return None
        if kind != codec.MSG:
            raise ProtocolError(f"{self.name}: unexpected {codec.KIND_NAMES[kind]}")
        msg = Msg(*body)
        if metas:
            if msg.type == CMD:  # a fed piece: the CMD carries its arrays
                self.rt.push_feed(msg.dst, codec.arrays_of(metas, frames))
                return None
            slots = self.rt.memory.get(msg.regst_desc_id)  # READY from another machine
            if slots is None or not 0 <= msg.slot < len(slots):
                raise ProtocolError(f"{self.name}: {msg!r} carries blobs but has no receive "
                                    "buffer here")
            codec.copy_into(metas, frames, slots[msg.slot],
                            f"{self.name}: regst desc {msg.regst_desc_id}")
        return msg

    def report(self, kind: int, body: Any, arrays: list | tuple = ()) -> None:
        self.router.send_to(self.node_addr, kind, body, arrays)

    def _deliver(self, task: Task | None, piece_id: int, arrays: dict) -> None:
        if task is not None:
            self.report(codec.DELIVER, [task.task_id, piece_id], list(arrays.items()))

    def run(self) -> None:
        """Dispatch messages until every actor exited; raises ``Stopped`` on STOP."""
        unit = self.unit
        if unit is None:
            return
        sock = self.sock
        sock.setsockopt(zmq.RCVTIMEO, 200)  # wake up to check that the node is alive
        local, inbox, stream, dispatch = unit.local, unit.inbox, unit.stream, unit.dispatch
        ppid = os.getppid()
        take = self._take
        for got in self.early:
            m = take(*got)
            if m is not None:
                local.append(m)
        self.early = []
        while unit.live > 0:
            if local:
                msg = local.popleft()
            elif not inbox.empty():  # commands the runtime queued itself (push_feed)
                msg = inbox.get_nowait()
                if not isinstance(msg, Msg):
                    raise Stopped
            else:
                # one blocking recv (RCVTIMEO bounds it): no zmq.Again + poll per wait, which
                # cost ~7 us per message on the latency-bound path
                if stream.has_pending():  # an async stream: poll completions between waits
                    unit._drain_stream()
                    if local or not sock.poll(1):
                        continue
                try:
                    kind, body, metas, frames = codec.recv(sock)
                except zmq.Again:
                    if os.getppid() != ppid:
                        raise Stopped from None  # the node is gone
                    continue
                msg = take(kind, body, metas, frames) if metas or kind else Msg(*body)
                if msg is None:
                    continue
            dispatch(msg)

    def wait_stop(self, limit: float = 60.0) -> None:
        """After an error: keep the process (and its sockets) until the node says stop."""
        ppid, deadline = os.getppid(), time.monotonic() + limit
        while time.monotonic() < deadline and os.getppid() == ppid:
            if self.sock.poll(200):
                if codec.recv(self.sock)[0] == codec.STOP:
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
        self.recorder.close()
        self.sock.close(linger=0)
        self.outbox.close(linger_ms=5000 if flush else 0)
        self.alloc.close()


def error_body(e: BaseException, where: str) -> dict:
    if isinstance(e, KernelError):
        return {"type": "KernelError", "kernel": e.to_dict()}
    name = type(e).__name__ if isinstance(e, ActorflowError) else "ProtocolError"
    text = str(e) if isinstance(e, ActorflowError) else f"{type(e).__name__}: {e}"
    return {"type": name, "message": f"{where}: {text}", "traceback": traceback.format_exc()}


def _die_with_parent() -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: the unit still exits when its parent pid changes


def main() -> int:
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
        unit = ProcessUnit(cfg)
        unit.report(codec.HELLO, [unit.thrd_id, os.getpid(), unit.direct])
        unit.wait_connect()
        unit.run()
        unit.report(codec.DONE, [unit.thrd_id])
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
            out.send(cfg["node_addr"], codec.encode(codec.ERROR, body))
            out.close(linger_ms=2000)
            return 1
        unit.dump_failure(body)
        unit.report(codec.ERROR, body)
        unit.wait_stop()
        unit.close(flush=False)
        return 1


if __name__ == "__main__":
    sys.exit(main())
