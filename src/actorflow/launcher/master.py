"""The control plane's master (rank 0): rendezvous, plan distribution, supervision.

One thread owns one "router" listener (transport) at ``MASTER_ADDR:MASTER_PORT``.  Workers
(and an optional monitor, the launcher) talk to it with control messages (``wire.py``):

    sync      -> sync            NTP-style clock exchange (``clock.py``), before hello
    hello     -> plan | reject   rank, world size, host, pid, clock offset; the plan (this
                                 machine's tasks + routing table) once every rank joined
    addr      -> peers           data-plane address; every machine's address once all sent
    ready     -> start           a barrier: sources start only when every machine is ready
    kv_set/kv_get, barrier       key-value store and named barriers for workers
    hb        <-> hb             heartbeats both ways; a rank silent for ``heartbeat_timeout``
                                 seconds is declared lost and the run aborted
    result, error, done          output pieces, the first error (the root cause), completion
    -> shutdown | abort, bye     orderly end, or abort after a failure
    root                         an aborted rank's own stall root (betters a remote one)
    watch     -> progress, final the monitor's feed: progress lines and the final summary;
                                 a launcher's watch may carry the compiled plan (``plan=None``
                                 here): it was compiled and validated once, by the launcher

Output pieces do not pass through here when the launcher has an output sink (workers send
them straight to it and report counts with ``done``); otherwise ``result`` messages carry
batches as frames and rank 0 keeps them for ``--out``.

``clock_offsets`` holds, per machine, master clock minus worker clock (seconds).
"""

from __future__ import annotations

import errno
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from actorflow.errors import LaunchError, MalformedMessage, TransportError, WaitTimeout
from actorflow.launcher.ports import resolve
from actorflow.launcher.store import Store
from actorflow.launcher.wire import CTRL, MAX_ROOT_SENTENCE, body_of
from actorflow.plan.io import plan_from_bytes, plan_to_bytes
from actorflow.plan.model import Plan
from actorflow.plan.shares import machine_shares, peer_machines
from actorflow.transport.comm import Listener, Message, listen
from actorflow.transport.registry import tcp_address
from actorflow.transport.security import Security

HEARTBEAT_EVERY = 0.5
MONITOR_WAIT = 10.0  # seconds a run waits for the launcher's monitor before starting anyway


@dataclass
class RankInfo:
    rank: int
    ident: bytes
    host: str
    pid: int
    last_seen: float
    status: str = "joined"  # joined, ready, running, done, failed, lost, aborted, bye
    addr: str = ""
    pieces: int = 0
    clock: dict = field(default_factory=dict)
    core: str = "?"  # the actor core the worker runs (actorflow._core.core_name)

    def summary(self) -> dict:
        return {"rank": self.rank, "host": self.host, "pid": self.pid, "status": self.status,
                "pieces": self.pieces, "clock_offset": self.clock.get("offset", 0.0),
                "core": self.core}


def run_core(cores: Iterable[str]) -> str:
    """The core a run ran on: the one every worker reported, else ``mixed``."""
    seen = set(cores)
    return seen.pop() if len(seen) == 1 else ("mixed" if seen else "?")


class ControlMaster:
    """Rank 0's control server; ``start()`` binds and runs it on a thread."""

    def __init__(self, world_size: int, plan: Plan | Callable[[int], Plan] | None,
                 host: str, port: int, *, run_id: str = "", pieces: int | None = None,
                 heartbeat_timeout: float = 2.0, join_timeout: float = 60.0,
                 expect_monitor: bool = False, bind_all: bool = False,
                 log: Callable[[str], None] | None = None,
                 security: Security | None = None) -> None:
        self.world_size = world_size
        self.host, self.port = host, port
        self.run_id = run_id
        self.pieces = pieces
        self.heartbeat_timeout = heartbeat_timeout
        self.join_timeout = join_timeout
        self.expect_monitor = expect_monitor
        self.bind_all = bind_all  # listen on every interface, not only the advertised one
        self.t_ready = 0.0
        self.log = log or (lambda s: None)
        self.setup_error = ""
        self.plan: Plan | None = None
        self._set_plan(plan)
        # no plan but a launcher watching: it sends the plan it compiled (else: rendezvous)
        self._awaiting_plan = plan is None and expect_monitor
        self.ranks: dict[int, RankInfo] = {}
        self.by_ident: dict[bytes, int] = {}
        self.monitors: set[bytes] = set()
        self.store = Store()
        self._peers_of: dict[int, list[int]] = {}  # rank -> machines its share sends to
        self._told: set[int] = set()  # ranks rejected because the plan did not load
        self.results: dict[str, dict[int, dict]] = {}  # kept when no monitor streams them
        self.result_counts: dict[str, int] = {}
        self.error: dict | None = None
        self.phase = "join"
        self.t_start = time.monotonic()
        self.t_run = 0.0
        self.t_end = 0.0
        self.finished = threading.Event()
        self.security = security
        self._server: Listener | None = None
        self._thread: threading.Thread | None = None
        self._last_hb = 0.0
        self._last_progress = 0.0
        self._final_acked = False
        self._closing = False
        self.ignored: dict[bytes, int] = {}  # peer identity -> malformed messages dropped

    def _set_plan(self, plan: Plan | Callable[[int], Plan] | None) -> None:
        try:
            self.plan = plan(self.world_size) if callable(plan) else plan
            if self.plan is not None and self.plan.machines.count > self.world_size:
                raise LaunchError(
                    f"the plan is for {self.plan.machines.count} machines but the cluster has "
                    f"{self.world_size} (pass --machines/--world-size "
                    f"{self.plan.machines.count})")
        except Exception as e:  # reported to every worker at hello, so nobody waits
            self.setup_error = f"rank 0 could not load the plan: {e}".splitlines()[0]

    # -- public --------------------------------------------------------------------------
    @property
    def clock_offsets(self) -> dict[int, float]:
        """machine id -> (master clock - that machine's clock), seconds."""
        return {r: i.clock.get("offset", 0.0) for r, i in sorted(self.ranks.items())}

    def start(self) -> str:
        ip = resolve(self.host)
        if self.bind_all:
            ip = "0.0.0.0"
        elif ip.startswith("127.") and self.host not in ("localhost", ip):
            # a host name mapped to loopback (Debian's 127.0.1.1): remote workers cannot
            # reach it there; listening everywhere is the user's call, not ours
            self.log(f"listening on {ip} only ({self.host} resolves to loopback): workers on "
                     "other hosts cannot reach it; pass --master-bind-all or an address "
                     "of this host's network interface as the master")
        addr = tcp_address(ip, self.port)
        try:  # CURVE with the run's key through the transport's Security hook (none: --insecure)
            self._server = listen(addr, "router", security=self.security, name="the master",
                                  plane="control")
        except TransportError as e:
            if getattr(e.__cause__, "errno", None) == errno.EADDRINUSE:
                raise LaunchError(f"master port {self.port} on {self.host} is already in use; "
                                  "choose another --master-port (0 picks a free one)") from e
            raise LaunchError(f"rank 0 cannot bind the master at {addr}: {e} (MASTER_ADDR must "
                              "be an address of rank 0's host)") from e
        self.endpoint = self._server.address
        self._thread = threading.Thread(target=self._main, name="actorflow-master", daemon=True)
        self._thread.start()
        return self.endpoint

    def wait(self, timeout: float) -> None:
        if not self.finished.wait(timeout):
            raise WaitTimeout(f"waited {timeout:.1f}s for the master to finish the run "
                              f"(phase {self.phase})")

    def close(self) -> None:
        self._closing = True
        self.phase = "closed"
        if self._thread is not None:
            self._thread.join(5.0)
        if self._server is not None:
            self._server.close(500)  # enough to flush a last abort/shutdown to workers

    def summary(self) -> dict:
        wall = (self.t_end or time.monotonic()) - (self.t_run or self.t_start)
        pieces = max(self.result_counts.values(), default=0)
        return {
            "ok": self.error is None and self.phase == "ended", "run_id": self.run_id,
            "pieces": pieces, "wall_seconds": round(wall, 4),
            "pieces_per_second": round(pieces / wall, 3) if wall > 0 else 0.0,
            "machines": [i.summary() for _, i in sorted(self.ranks.items())],
            "core": run_core(i.core for i in self.ranks.values()),
            "clock_offsets": {str(k): v for k, v in self.clock_offsets.items()},
            "error": self.error,
        }

    # -- loop ----------------------------------------------------------------------------
    def _main(self) -> None:
        try:
            self._loop()
        except Exception as e:  # a bug here must still end the run, loudly
            root = self._fail({"rank": 0, "kind": "master", "message": f"master crashed: {e!r}"})
            self._broadcast("abort", reason=root["message"])
        finally:
            self.t_end = self.t_end or time.monotonic()
            self._send_final()
            self.finished.set()

    def _loop(self) -> None:
        wait = 0.1
        while self.phase not in ("ended", "aborted", "closed"):
            m = self._recv(wait)
            while m is not None:  # everything waiting, then the clock's work
                ident = m.peer or b""
                try:
                    self._handle(ident, body_of(m, f"peer {ident!r}"), m)
                except (MalformedMessage, TransportError) as e:  # a stranger's bytes: ignored
                    self._ignore(ident, str(e))
                except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
                    self._ignore(ident, f"a malformed control message: "
                                        f"{type(e).__name__}: {e}")
                m = self._recv(0)
            self._tick(time.monotonic())
        if self.phase == "aborted":
            self._drain_byes(3.0)

    def _ignore(self, ident: bytes, what: str) -> None:
        """Drop a malformed message: counted per peer, logged the first time only."""
        n = self.ignored.get(ident, 0) + 1
        self.ignored[ident] = n
        if n == 1:
            self.log(f"ignored {what[:200]} (from {ident!r:.40}; later ones are only counted)")

    def _tick(self, now: float) -> None:
        if now - self._last_hb >= HEARTBEAT_EVERY:
            self._last_hb = now
            self._broadcast("hb")
        if self.monitors and self.phase == "run" and now - self._last_progress >= 1.0:
            self._last_progress = now
            self._to_monitors("progress", **self._progress())
        self._reply(self.store.expire(now))
        if self.phase == "join" and len(self.ranks) < self.world_size and (
                now - self.t_start > self.join_timeout):
            missing = sorted(set(range(self.world_size)) - set(self.ranks))
            self._abort({"rank": missing[0], "kind": "join", "message":
                         f"rank(s) {missing} never joined within {self.join_timeout:.0f}s"})
        for info in self.ranks.values():
            if info.status in ("bye", "failed", "lost", "aborted"):
                continue
            if now - info.last_seen > self.heartbeat_timeout:
                info.status = "lost"
                self._abort({"rank": info.rank, "kind": "lost", "message":
                             f"machine {info.rank} (host {info.host}, pid {info.pid}) lost: no "
                             f"heartbeat for {now - info.last_seen:.1f}s"})
        if self.phase == "ready":
            self._maybe_start(now)
        if self.phase == "shutdown" and all(i.status == "bye" for i in self.ranks.values()):
            self.phase = "ended"

    # -- messages ------------------------------------------------------------------------
    def _recv(self, timeout: float) -> Message | None:
        assert self._server is not None
        try:
            return self._server.recv(timeout)
        except MalformedMessage as e:  # a stranger's bytes must not end the run
            self._ignore(b"", str(e))
            return None

    def _handle(self, ident: bytes, msg: dict, m: Message | None = None) -> None:
        t = msg["t"]
        if t == "sync":
            t1 = time.time()
            self._send(ident, "sync", t0=msg["t0"], t1=t1, t2=time.time())
            return
        if t == "watch":
            self.monitors.add(ident)
            if self._awaiting_plan and msg.get("plan") is not None:
                self._awaiting_plan = False
                self._set_plan(plan_from_bytes(msg["plan"], "the plan sent by the launcher"))
                self._told_all()
                if self.plan is not None and len(self.ranks) == self.world_size:
                    self._distribute()
            self._send(ident, "watching", world_size=self.world_size, run_id=self.run_id)
            return
        if t == "final_ack":
            self._final_acked = True
            return
        if t == "hello":
            self._hello(ident, msg)
            return
        if t == "hb" and "rank" in msg:  # from a worker's heartbeat thread (its own socket)
            info = self.ranks.get(int(msg["rank"]))
            if info is not None:
                info.last_seen = time.monotonic()
                info.pieces = int(msg.get("pieces", info.pieces))
            return
        rank = self.by_ident.get(ident)
        if rank is None:
            self._send(ident, "reject", reason=f"'{t}' from a peer that never said hello")
            return
        info = self.ranks[rank]
        info.last_seen = time.monotonic()
        if t == "result":  # the one message with frames
            self._on_result(info, msg, m)
            return
        handler = _HANDLERS.get(t)
        if handler is None:
            self._fail({"rank": rank, "kind": "protocol",
                        "message": f"rank {rank} sent unknown control message '{t}'"})
            return
        handler(self, ident, info, msg)

    def _hello(self, ident: bytes, msg: dict) -> None:
        rank, world = int(msg["rank"]), int(msg["world_size"])
        reason = ""
        if self.setup_error:
            reason = self.setup_error
        elif world != self.world_size:
            reason = (f"rank {rank} was started with world size {world} but the master has "
                      f"{self.world_size}")
        elif not 0 <= rank < self.world_size:
            reason = f"rank {rank} out of range for world size {self.world_size}"
        elif rank in self.ranks:
            old = self.ranks[rank]
            reason = (f"rank {rank} joined twice (host {old.host} pid {old.pid}, then host "
                      f"{msg.get('host')} pid {msg.get('pid')})")
        elif self.phase != "join":
            reason = f"rank {rank} joined after the run started"
        if reason:
            self._send(ident, "reject", reason=reason)
            if self.setup_error:  # nothing can run: end once every rank has been told
                self._told.add(rank)
                if len(self._told) >= self.world_size:
                    self._fail({"rank": 0, "kind": "setup", "message": self.setup_error})
                    self.phase = "aborted"
            else:
                self.log(f"rejected a worker: {reason}")
            return
        info = RankInfo(rank, ident, str(msg.get("host", "?")), int(msg.get("pid", 0)),
                        time.monotonic(), clock=dict(msg.get("clock") or {}),
                        core=str(msg.get("core", "?"))[:16])
        self.ranks[rank] = info
        self.by_ident[ident] = rank
        self.log(f"rank {rank} joined from {info.host} pid {info.pid} "
                 f"(clock offset {info.clock.get('offset', 0.0) * 1e3:+.3f} ms)")
        if len(self.ranks) == self.world_size and not self._awaiting_plan:
            self._distribute()  # (else the launcher's plan is still on its way)

    def _told_all(self) -> None:
        """A plan from the launcher that failed to load: tell the ranks that already joined."""
        if not self.setup_error:
            return
        for rank, info in list(self.ranks.items()):
            self._send(info.ident, "reject", reason=self.setup_error)
            self._told.add(rank)
        if len(self._told) >= self.world_size:
            self._fail({"rank": 0, "kind": "setup", "message": self.setup_error})
            self.phase = "aborted"

    def _distribute(self) -> None:
        self.phase = "setup"
        if self.plan is None:  # a rendezvous only: SPMD scripts meet here, then use the store
            for info in self.ranks.values():
                self._send(info.ident, "plan", plan=None, run_id=self.run_id,
                           pieces=self.pieces)
            return
        # each machine gets its share: its tasks and the routes it uses (one pass, O(plan))
        shares = machine_shares(self.plan, list(self.ranks))
        for rank, info in self.ranks.items():
            self._peers_of[rank] = peer_machines(shares[rank], rank)
            self._send(info.ident, "plan", plan=plan_to_bytes(shares[rank]),
                       run_id=self.run_id, pieces=self.pieces)

    def _on_addr(self, ident: bytes, info: RankInfo, msg: dict) -> None:
        info.addr = str(msg["addr"])
        if all(i.addr for i in self.ranks.values()):
            for rank, i in self.ranks.items():  # only the addresses its routes lead to
                if i.status not in ("lost", "bye"):
                    peers = {str(r): self.ranks[r].addr for r in self._peers_of.get(rank, [])
                             if r in self.ranks}
                    self._send(i.ident, "peers", peers=peers)

    def _on_ready(self, ident: bytes, info: RankInfo, msg: dict) -> None:
        info.status = "ready"
        if all(i.status == "ready" for i in self.ranks.values()):
            self.phase = "ready"
            self.t_ready = time.monotonic()
            self._maybe_start(self.t_ready)

    def _maybe_start(self, now: float) -> None:
        """Start once every machine is ready and the launcher's monitor (if any) watches."""
        if self.expect_monitor and not self.monitors and now - self.t_ready < MONITOR_WAIT:
            return
        if self.expect_monitor and not self.monitors:
            self.log(f"no launcher monitor after {MONITOR_WAIT:.0f}s; starting without it")
        self.phase = "run"
        self.t_run = self._last_progress = now
        for i in self.ranks.values():
            i.status = "running"
        self._broadcast("start", pieces=self.pieces)

    def _on_hb(self, ident: bytes, info: RankInfo, msg: dict) -> None:
        info.pieces = int(msg.get("pieces", info.pieces))

    def _on_result(self, info: RankInfo, msg: dict, m: Message | None) -> None:
        """A batch of output pieces (no launcher sink): kept for rank 0's ``--out``."""
        name, ids = str(msg["name"]), [int(p) for p in msg["pieces"]]
        arrays = m.arrays() if m is not None else {}
        kept = self.results.setdefault(name, {})
        for i, p in enumerate(ids):
            kept[p] = {k: a[i] for k, a in arrays.items()}
        self.result_counts[name] = self.result_counts.get(name, 0) + len(ids)
        info.pieces = max(info.pieces, int(msg.get("delivered", 0)))

    def _on_error(self, ident: bytes, info: RankInfo, msg: dict) -> None:
        info.status = "failed"
        err = dict(msg.get("error") or {})
        err.setdefault("rank", info.rank)
        err.setdefault("host", info.host)
        self._abort(err)

    def _on_done(self, ident: bytes, info: RankInfo, msg: dict) -> None:
        info.status = "done"
        for name, n in (msg.get("outputs") or {}).items():  # sent to the launcher's sink
            self.result_counts[str(name)] = self.result_counts.get(str(name), 0) + int(n)
        info.pieces = int(msg.get("pieces", info.pieces))
        if self.phase == "run" and all(i.status == "done" for i in self.ranks.values()):
            self.t_end = time.monotonic()
            self.phase = "shutdown"
            self._broadcast("shutdown")

    def _on_root(self, ident: bytes, info: RankInfo, msg: dict) -> None:
        """An aborted rank's own actors show a root with evidence (``worker._offer_root``):
        it replaces a first error that was a stall whose root only waited across the wire,
        so the machine blamed does not depend on whose watchdog spoke first."""
        err = self.error
        sentence, evidence = msg["sentence"], msg["evidence"]
        if not isinstance(sentence, str) or evidence not in ("lost", "kernel", "silent"):
            raise TypeError(f"rank {info.rank}: a root message needs a sentence and an "
                            f"evidence, got {type(sentence).__name__} and {evidence!r:.20}")
        if err is None or err.get("kind") != "StallError" or not err.get("remote_root"):
            return
        self.error = {"rank": info.rank, "host": info.host, "kind": "StallError",
                      "remote_root": False,
                      "message": f"stall on machine {info.rank} (asked after machine "
                                 f"{err.get('rank')}'s watchdog): "
                                 f"{sentence[:MAX_ROOT_SENTENCE]}"}
        self.log(f"root cause: {self.error['message']}")

    def _on_bye(self, ident: bytes, info: RankInfo, msg: dict) -> None:
        if info.status not in ("failed", "lost"):
            info.status = "bye" if self.phase in ("shutdown", "ended") else "aborted"

    def _on_kv_set(self, ident: bytes, info: RankInfo, msg: dict) -> None:
        self._reply(self.store.set(ident, str(msg["key"]), msg.get("value")))

    def _on_kv_get(self, ident: bytes, info: RankInfo, msg: dict) -> None:
        deadline = time.monotonic() + float(msg.get("timeout", 0))
        self._reply(self.store.get(ident, str(msg["key"]), deadline))

    def _on_barrier(self, ident: bytes, info: RankInfo, msg: dict) -> None:
        if self.store.arrive(str(msg["name"]), info.rank, self.world_size):
            self._broadcast("barrier_ok", name=str(msg["name"]))

    # -- failure and output ----------------------------------------------------------------
    def _fail(self, err: dict) -> dict:
        """Record ``err`` unless an earlier failure did; return the root cause."""
        if self.error is None:  # the first failure is the root cause
            self.error = err
            if err.get("kind") != "setup":  # a setup error is each worker's own one line
                self.log(f"run failed: {err.get('message')}")
        return self.error

    def _abort(self, err: dict) -> None:
        root = self._fail(err)
        if self.phase in ("aborted", "ended"):
            return
        self.phase = "aborted"
        self.t_end = time.monotonic()
        reason = f"machine {root.get('rank')} failed: {root.get('message')}"
        for i in self.ranks.values():
            if i.status not in ("failed", "lost", "bye"):
                self._send(i.ident, "abort", reason=reason)

    def _drain_byes(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not self._closing and any(
                i.status not in ("failed", "lost", "bye", "aborted") for i in self.ranks.values()):
            m = self._recv(0.1)
            if m is not None:
                try:
                    msg = body_of(m)
                except MalformedMessage:
                    continue
                ident = m.peer or b""
                rank = self.by_ident.get(ident)
                if msg["t"] == "root" and rank is not None:
                    try:
                        self._on_root(ident, self.ranks[rank], msg)
                    except (KeyError, TypeError) as e:
                        self._ignore(ident, f"a malformed root message: {e}")
                elif msg["t"] in ("bye", "error") and rank is not None:
                    info = self.ranks[rank]
                    if info.status not in ("failed", "lost"):
                        info.status = "aborted"
                elif msg["t"] == "watch":
                    self.monitors.add(ident)

    def _progress(self) -> dict:
        done = max([*self.result_counts.values(), *(i.pieces for i in self.ranks.values())],
                   default=0)
        return {"pieces": done, "elapsed": time.monotonic() - (self.t_run or self.t_start),
                "per_machine": {str(r): i.pieces for r, i in sorted(self.ranks.items())}}

    def _send_final(self) -> None:
        if not self.monitors:
            return
        self._to_monitors("final", summary=self.summary())
        deadline = time.monotonic() + 5.0
        while not self._final_acked and time.monotonic() < deadline and not self._closing:
            m = self._recv(0.1)
            if m is not None and m.kind == CTRL and isinstance(m.body, dict) and (
                    m.body.get("t") == "final_ack"):
                self._final_acked = True

    # -- sending -------------------------------------------------------------------------
    def _send(self, ident: bytes, t: str, arrays: list | tuple = (), **fields: Any) -> None:
        assert self._server is not None
        fields["t"] = t
        self._server.send(ident, CTRL, fields, arrays)

    def _reply(self, replies: list[tuple[bytes, str, dict]]) -> None:
        for ident, t, fields in replies:
            self._send(ident, t, **fields)

    def _broadcast(self, t: str, **fields: Any) -> None:
        for i in self.ranks.values():
            if i.status not in ("lost", "bye"):
                self._send(i.ident, t, **fields)

    def _to_monitors(self, t: str, arrays: list | tuple = (), **fields: Any) -> None:
        for ident in self.monitors:
            self._send(ident, t, arrays, **fields)


_HANDLERS: dict[str, Callable[[ControlMaster, bytes, RankInfo, dict], None]] = {
    "hb": ControlMaster._on_hb, "addr": ControlMaster._on_addr,
    "ready": ControlMaster._on_ready,
    "error": ControlMaster._on_error, "done": ControlMaster._on_done,
    "bye": ControlMaster._on_bye, "root": ControlMaster._on_root,
    "kv_set": ControlMaster._on_kv_set,
    "kv_get": ControlMaster._on_kv_get, "barrier": ControlMaster._on_barrier,
}
