"""Process units for a MachineNode: each thrd_id of the machine in its own process.

The node creates one shared-memory segment per regst desc of the machine (plus receive
buffers for remote inputs), spawns ``python -m actorflow.actors.process_unit`` per unit
with a msgpack config on stdin, and waits for each unit's HELLO.  Units talk to each other
directly over ``ipc://`` (slot numbers only) and to other machines over their ``tcp://``
addresses (READY with blobs).  A cross-machine READY sent to the node itself lands here
(``landing.land``: blobs into the shared receive buffer), then the header goes on to the
unit.

A monitor thread watches the unit processes: one that dies before finishing fails the node
with ``UnitLost`` naming the unit, machine, pid and signal; ``close`` stops every unit
(STOP, then SIGKILL after a grace period) and unlinks every segment, on every exit path.
"""

from __future__ import annotations

import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import TYPE_CHECKING

import msgpack

from actorflow import errors
from actorflow.actors import unit_rings
from actorflow.actors import unit_wire as uw
from actorflow.actors.landing import land
from actorflow.actors.memory import shm_blobs
from actorflow.actors.process_unit import CONFIG_VERSION
from actorflow.actors.procstate import frozen_after, is_stopped
from actorflow.actors.routing import Router, compose_address
from actorflow.actors.unit_rings import MachineRings
from actorflow.errors import (
    ActorflowError,
    InternalError,
    KernelError,
    ProtocolError,
    TransportError,
    UnitLost,
    WaitTimeout,
)
from actorflow.plan.io import plan_to_bytes
from actorflow.protocol.messages import Msg, cmd
from actorflow.protocol.state import describe_states
from actorflow.transport.auth import current_key
from actorflow.transport.comm import Message
from actorflow.transport.registry import another_port, ipc_address, scheme_of
from actorflow.transport.shm import ShmArena

if TYPE_CHECKING:
    from actorflow.actors.node import MachineNode

_ERROR_GRACE = 1.0  # s to wait for a unit's ERROR message after it exited with code 1
FROZEN_AFTER = frozen_after()  # s a unit may stay stopped (SIGSTOP) before the node fails


class ProcessHosting:
    native_rx = None  # unit processes take their own messages (the node relays the rest)

    def __init__(self, node: MachineNode) -> None:
        view = node.view
        self.node = node
        self.view = view
        self.mid = view.machine_id
        # named after the run so the launcher can remove it when this process is killed
        self.tmpdir = tempfile.mkdtemp(prefix=f"actorflow-{node.run_id}-m{self.mid}-")
        self.node_ipc = ipc_address(self.tmpdir, "node")
        self.unit_addrs = {k: ipc_address(self.tmpdir, f"u{k[1]}") for k in view.units}
        # STATUS queries go to a unit's helper thread (actors/unit_status.py)
        self.ctl_addrs = {k: ipc_address(self.tmpdir, f"u{k[1]}-ctl") for k in view.units}
        self.token = secrets.token_bytes(uw.TOKEN_BYTES)  # control messages carry it (unit_wire)
        self.arena = ShmArena(node.run_id, self.mid)
        self.rings: MachineRings | None = None
        try:
            descs = [d for t in view.tasks for d in t.produced.values()]
            for d in [*descs, *view.remote_descs.values()]:
                self.arena.create(d.regst_desc_id, d.register_num, shm_blobs(d))
            # units of this machine swap records through shared-memory rings (the compiled
            # core), else through their ipc inboxes
            if len(view.units) > 1 and unit_rings.unavailable() is None:
                self.rings = MachineRings(node.run_id, view)
        except BaseException:
            self._cleanup_files()
            raise
        self.router = Router(self.mid, view.routing, node.outbox, self.arena.memory,
                             unit_addrs=self.unit_addrs)
        self.procs: dict[tuple[int, int], subprocess.Popen] = {}
        self._cond = threading.Condition()
        self.hello: set[int] = set()
        self.connected: set[int] = set()
        self.direct: dict[int, str | None] = {}
        self.loops: dict[int, str] = {}  # thrd -> "native" (compiled, on rings) or "python"
        self.states: dict[int, list[dict]] = {}
        self._query = 0  # id of the current STATUS query: late answers are dropped
        self._query_lock = threading.RLock()  # RLock: a SIGUSR1 dump may ask mid-query
        self.done: set[int] = set()
        self._all_done = threading.Event()
        if not view.units:
            self._all_done.set()
        self._closing = False
        self._monitor: threading.Thread | None = None

    def extra_binds(self) -> list[str]:
        return [self.node_ipc]

    @property
    def error(self) -> BaseException | None:
        return None  # the node holds the error (units report to it)

    def unit_label(self, key: tuple[int, int]) -> str:
        p = self.procs.get(key)
        pid = f", pid {p.pid}" if p is not None else ""
        return f"unit process m{key[0]}-t{key[1]} (machine {key[0]}, thrd {key[1]}{pid})"

    # -- start -------------------------------------------------------------------------
    def on_bind(self, address: str) -> str:
        """Spawn the units (each also listens where other machines can reach it directly);
        return the machine's address with theirs (``routing.compose_address``)."""
        # tcp: a port of its own on the node's host; ipc: its own inbox; inproc: via the node
        direct = another_port(address) or ("own" if scheme_of(address) == "ipc" else None)
        base = {
            "version": CONFIG_VERSION, "plan": plan_to_bytes(self.view.plan),
            "machine_id": self.mid, "run_id": self.node.run_id, "node_addr": self.node_ipc,
            "unit_addrs": [[m, t, a] for (m, t), a in self.unit_addrs.items()],
            "direct": direct,
            # --trace: each unit process records its own file into the same directory
            "trace": rec.trace_config() if (rec := self.node.recorder) is not None else None,
            # the run's CURVE key: on the unit's stdin like the rest, never argv or env
            "cluster_key": ck.to_bytes() if (ck := current_key()) is not None else None,
            "token": self.token,
            "rings": self.rings.config() if self.rings is not None else None,
        }
        fds = self.rings.pass_fds() if self.rings is not None else ()
        for key in self.view.units:
            p = subprocess.Popen([sys.executable, "-m", "actorflow.actors.process_unit"],
                                 stdin=subprocess.PIPE, pass_fds=fds)
            self.procs[key] = p
            assert p.stdin is not None
            p.stdin.write(msgpack.packb({**base, "thrd_id": key[1],
                                         "ctl_addr": self.ctl_addrs[key]}, use_bin_type=True))
            p.stdin.close()
        self._monitor = threading.Thread(target=self._watch, daemon=True,
                                         name=f"actorflow-m{self.mid}-units")
        self._monitor.start()
        self._wait_units(self.hello, "start")
        return compose_address(address, {t: a for t, a in self.direct.items() if a})

    def start(self) -> None:
        """Give every unit all machines' addresses; return once each has them."""
        addrs = {str(k): v for k, v in self.node.machine_addrs.items()}
        for addr in self.unit_addrs.values():
            self.router.send_to(addr, uw.CONNECT, uw.seal(self.token, addrs))
        self._wait_units(self.connected, "take the machines' addresses")

    def _wait_units(self, seen: set[int], what: str) -> None:
        deadline = time.monotonic() + self.node.timeout
        with self._cond:
            while len(seen) < len(self.procs) and self.node.error is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    missing = [self.unit_label(k) for k in self.procs if k[1] not in seen]
                    raise WaitTimeout(f"machine {self.mid}: waited {self.node.timeout:.1f}s "
                                      f"for unit processes to {what}: {', '.join(missing)}")
                self._cond.wait(min(left, 0.1))
        if self.node.error is not None:
            raise self.node.error

    # -- messages ------------------------------------------------------------------------
    def command(self, msg: Msg) -> None:
        self.router.send(msg)

    def push_feed(self, task_id: int, arrays: dict) -> None:
        addr, _ = self.router.where(task_id)
        self.router.send_to(addr, uw.MSG, cmd(task_id, "feed").header(), list(arrays.items()))

    def incoming(self, m: Message) -> None:
        msg = land(m, self.arena.memory, self.push_feed, f"machine {self.mid}")
        if msg is not None:
            self.router.send(msg)  # on to the unit process: header only

    def unit_message(self, m: Message) -> None:
        """A unit's report; one without the node's token is rejected (the node's listener is
        reachable from other machines, and with ``--insecure`` from anyone)."""
        kind = m.kind
        body = uw.unseal(self.token, m.body, kind)
        if kind == uw.DELIVER:  # a batch of output pieces: [task, [piece ids]] + frames
            self.node.delivered(self.view.plan.task(int(body[0])), body[1], m.views())
        elif kind in (uw.HELLO, uw.CONNECTED, uw.DONE):
            with self._cond:
                if kind == uw.HELLO:
                    self.direct[int(body[0])] = body[2]
                if kind == uw.CONNECTED and len(body) > 1:  # which loop the unit runs
                    self.loops[int(body[0])] = str(body[1])
                {uw.HELLO: self.hello, uw.CONNECTED: self.connected,
                 uw.DONE: self.done}[kind].add(int(body[0]))
                if len(self.done) == len(self.view.units):
                    self._all_done.set()
                self._cond.notify_all()
        elif kind == uw.STATES:
            with self._cond:
                if len(body) < 3 or body[2] == self._query:
                    self.states[int(body[0])] = body[1]
                self._cond.notify_all()
        elif kind == uw.ERROR:
            self.node.fail(error_from_body(body))
        else:
            raise ProtocolError(f"machine {self.mid}: unexpected {uw.kind_name(kind)}")

    def flush_outputs(self) -> None:
        pass  # unit processes send their batches themselves

    # -- failure / end -------------------------------------------------------------------
    def _watch(self) -> None:
        reported: set[tuple[int, int]] = set()
        stopped_since: dict[tuple[int, int], float] = {}
        while not self._closing and len(reported) < len(self.procs):
            for key, p in self.procs.items():
                rc = p.poll()
                if rc is None and key not in reported and key[1] not in self.done:
                    self._check_frozen(key, p, stopped_since, reported)
                if rc is None or key in reported:
                    continue
                reported.add(key)
                if rc == 0:  # finished (its DONE is here or on its way) or was stopped
                    if not self._done_soon(key):
                        self.node.fail(UnitLost(
                            f"machine {self.mid}: {self.unit_label(key)} exited before its "
                            "actors finished, without an error or a DONE report"))
                    continue
                if rc == 1:  # it reported an error: give the message a moment to arrive
                    end = time.monotonic() + _ERROR_GRACE
                    while self.node.error is None and time.monotonic() < end:
                        time.sleep(0.02)
                    if self.node.error is not None:
                        continue
                how = (f"was killed by {signal.Signals(-rc).name}" if rc < 0 else
                       f"exited with code {rc}")
                self.node.fail(UnitLost(f"machine {self.mid}: {self.unit_label(key)} {how} "
                                        "before its actors finished"))
            time.sleep(0.05)

    def _done_soon(self, key: tuple[int, int]) -> bool:
        """True once a unit that exited with code 0 reported DONE, or the node is stopping
        anyway (a STOP from the node also ends a unit with code 0)."""
        end = time.monotonic() + _ERROR_GRACE
        while time.monotonic() < end:
            if key[1] in self.done or self._closing or self.node.error is not None:
                return True
            time.sleep(0.02)
        return False

    def _check_frozen(self, key: tuple[int, int], p: subprocess.Popen,
                      since: dict[tuple[int, int], float], reported: set) -> None:
        """A unit stopped (SIGSTOP, a debugger) for ``FROZEN_AFTER`` s fails the node: it
        would otherwise hold its regsts forever and the stall would be blamed on a peer."""
        if not is_stopped(p.pid):
            since.pop(key, None)
            return
        first = since.setdefault(key, time.monotonic())
        if time.monotonic() - first >= FROZEN_AFTER:
            reported.add(key)
            self.node.fail(UnitLost(f"machine {self.mid}: {self.unit_label(key)} is stopped "
                                    f"(frozen for {FROZEN_AFTER:g}s, e.g. SIGSTOP) before its "
                                    "actors finished"))

    def stop(self, error: BaseException) -> None:
        for addr in self.unit_addrs.values():
            try:
                self.router.send_to(addr, uw.STOP, uw.seal(self.token, None))
            except ActorflowError:
                pass
        self._all_done.set()
        with self._cond:
            self._cond.notify_all()

    def wait(self, timeout: float) -> bool:
        return self._all_done.wait(timeout)

    def ask_states(self, timeout: float = 1.0) -> dict[tuple[int, int], list[dict] | None]:
        """Every unfinished unit's actor states, asked from the units themselves (None: no
        answer within ``timeout``); a unit's helper thread answers even mid-kernel."""
        unfinished = [k for k in self.view.units if k[1] not in self.done]
        live = [k for k in unfinished  # a process gone or stopped cannot answer: do not wait
                if k not in self.procs or (self.procs[k].poll() is None
                                           and not is_stopped(self.procs[k].pid))]
        if not live:
            return dict.fromkeys(unfinished)
        with self._query_lock:  # the watchdog, a signal dump and a hang report may all ask
            with self._cond:
                self._query += 1
                qid, self.states = self._query, {}
            for k in live:
                try:
                    self.router.send_to(self.ctl_addrs[k], uw.STATUS, qid)
                except ActorflowError:
                    pass
            deadline = time.monotonic() + timeout
            with self._cond:
                while len(self.states) < len(live) and time.monotonic() < deadline:
                    self._cond.wait(0.05)
                states = dict(self.states)
        return {k: states.get(k[1]) for k in unfinished}

    def actor_states(self) -> list[dict]:
        """Every actor's ``blocked_on()`` (watchdog, dumps); units that finished are listed
        as exited, units that do not answer are left out."""
        out = [{"task_id": t.task_id, "label": t.label, "status": "exited", "acts": 0,
                "machine_id": t.machine_id, "thrd_id": t.thrd_id}
               for t in self.view.tasks if t.thrd_id in self.done]
        for got in self.ask_states().values():
            out.extend(got or [])
        return out

    def describe_live(self, timeout: float = 1.0) -> str:
        """Why each unfinished unit's actors wait, asked from the units themselves."""
        asked = self.ask_states(timeout)
        if not asked:
            return "every unit finished"
        return "; ".join(
            f"{self.unit_label(k)}: " + (
                describe_states([s for s in got if s["status"] != "exited"])
                if got is not None else f"no answer within {timeout:.1f}s (its process is "
                                        "stuck or gone)")
            for k, got in asked.items())

    def close(self, timeout: float) -> None:
        self._closing = True
        try:
            if any(p.poll() is None for p in self.procs.values()):
                self.stop(TransportError("closing"))
            deadline = time.monotonic() + min(timeout, 3.0)
            for p in self.procs.values():
                if is_stopped(p.pid):  # frozen: it cannot take STOP, do not wait for it
                    p.kill()
            for p in self.procs.values():
                try:
                    p.wait(max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    p.kill()
            for p in self.procs.values():
                p.wait()
            if self._monitor is not None:
                self._monitor.join(timeout)
        finally:
            self._cleanup_files()

    def _cleanup_files(self) -> None:
        if self.rings is not None:
            self.rings.close()
        self.arena.unlink()
        shutil.rmtree(self.tmpdir, ignore_errors=True)


def error_from_body(body: dict) -> ActorflowError:
    """Rebuild a unit's error: KernelError from its dict, others by class name (a name that
    is not an actorflow error, or a class not built from a message alone: InternalError)."""
    if body.get("type") == "KernelError":
        return KernelError.from_dict(body["kernel"])
    message = str(body.get("message", "unit failed"))
    cls = getattr(errors, str(body.get("type")), None)
    if isinstance(cls, type) and issubclass(cls, ActorflowError) and cls is not KernelError:
        try:
            return cls(message)
        except TypeError:  # needs more than a message (RankLost, JobRunError, ...)
            pass
    return InternalError(message)
