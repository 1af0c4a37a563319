"""A worker's side of the control plane: one "dealer" comm to the master, one thread.

Every wait sends heartbeats, notices an ``abort`` from the master, and gives up when the
master has been silent for ``master_timeout`` seconds, so a worker never hangs on a dead or
unreachable master.  Only the thread that created the client may use it.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any

from actorflow.errors import LaunchError, MalformedMessage, WaitTimeout
from actorflow.launcher import clock
from actorflow.launcher.ports import resolve
from actorflow.launcher.wire import CTRL, body_of
from actorflow.transport.comm import Comm, connect
from actorflow.transport.registry import tcp_address
from actorflow.transport.security import Security

HEARTBEAT_EVERY = 0.5


class Aborted(LaunchError):
    """The master aborted the run because another machine failed."""


class ControlClient:
    def __init__(self, master_host: str, master_port: int, rank: int, world_size: int, *,
                 connect_timeout: float = 30.0, master_timeout: float = 3.0,
                 security: Security | None = None) -> None:
        self.rank, self.world_size = rank, world_size
        self.where = f"{master_host}:{master_port}"
        self.connect_timeout = connect_timeout
        self.master_timeout = master_timeout
        self.clock = clock.ClockSample(0.0, 0.0)
        self.pieces = 0  # reported with every heartbeat (progress per machine)
        self._inbox: deque[dict] = deque()
        self.security = security
        self._endpoint = tcp_address(resolve(master_host), master_port)
        self._comm: Comm = connect(self._endpoint, "dealer", security=security, linger_ms=1000,
                                   name=f"rank {rank}'s control comm", plane="control")
        self._hb: threading.Thread | None = None
        self._hb_stop = threading.Event()
        self._last_rx = time.monotonic()
        self._last_tx = 0.0
        self._connected = False

    # -- rendezvous ------------------------------------------------------------------------
    def sync_clock(self, rounds: int = 5) -> clock.ClockSample:
        """Reach the master (or fail naming it) and measure the clock offset."""
        samples = []
        for i in range(rounds):
            t0 = time.time()
            self.send("sync", t0=t0)
            limit = self.connect_timeout if i == 0 else self.master_timeout
            reply = self._wait_raw({"sync"}, limit, first=i == 0)
            samples.append(clock.sample(t0, reply["t1"], reply["t2"], time.time()))
        self.clock = clock.best(samples)
        return self.clock

    def hello(self, host: str, pid: int, timeout: float) -> dict:
        """Join; returns the ``plan`` message once every rank has joined."""
        from actorflow._core import core_name

        self.send("hello", rank=self.rank, world_size=self.world_size, host=host, pid=pid,
                  clock=self.clock.to_dict(), core=core_name())
        return self.wait_for({"plan"}, timeout, "the plan from the master (other ranks joining)")

    # -- key-value and barrier -------------------------------------------------------------
    def kv_set(self, key: str, value: Any, timeout: float = 10.0) -> None:
        self.send("kv_set", key=key, value=value)
        self.wait_for({"kv_ok"}, timeout, f"the master to store key '{key}'")

    def kv_get(self, key: str, timeout: float = 10.0) -> Any:
        self.send("kv_get", key=key, timeout=timeout)
        msg = self.wait_for({"kv_val"}, timeout + self.master_timeout, f"key '{key}'")
        if msg.get("missing"):
            raise WaitTimeout(f"waited {timeout:.1f}s for key '{key}' in the master's store")
        return msg.get("value")

    def barrier(self, name: str, timeout: float = 30.0) -> None:
        self.send("barrier", name=name)
        self.wait_for({"barrier_ok"}, timeout, f"barrier '{name}' (all {self.world_size} ranks)")

    # -- messages --------------------------------------------------------------------------
    def send(self, t: str, arrays: list | tuple = (), **fields: Any) -> None:
        """A control message; ``arrays`` (name, array) go as zero-copy frames."""
        fields["t"] = t
        self._comm.send(CTRL, fields, arrays)
        self._last_tx = time.monotonic()

    def poll(self, timeout: float) -> list[dict]:
        """Messages that arrived within ``timeout`` seconds (heartbeats handled here)."""
        self._pump(timeout)
        out = list(self._inbox)
        self._inbox.clear()
        for m in out:
            if m["t"] == "abort":
                raise Aborted(f"aborted by the master: {m.get('reason')}")
            if m["t"] == "reject":
                raise LaunchError(f"the master at {self.where} rejected rank {self.rank}: "
                                  f"{m.get('reason')}")
        return out

    def keepalive(self, timeout: float) -> None:
        """Heartbeat and watch for abort for ``timeout`` s, keeping other messages queued."""
        self._inbox.extend(m for m in self.poll(timeout) if m["t"] != "hb")

    def wait_for(self, types: set[str], timeout: float | None, what: str) -> dict:
        """The next message of one of ``types``.  ``timeout=None`` waits as long as the
        master is alive (its heartbeats bound the wait: silence raises after
        ``master_timeout``), for waits whose length depends on other machines' work."""
        deadline = time.monotonic() + (float("inf") if timeout is None else timeout)
        while True:
            for i, m in enumerate(self._inbox):
                if m["t"] in types:
                    del self._inbox[i]
                    return m
            left = deadline - time.monotonic()
            if left <= 0:
                raise WaitTimeout(f"rank {self.rank} waited {timeout:.1f}s for {what}")
            self.keepalive(min(left, 0.1))

    def start_heartbeat(self) -> None:
        """Beat from a thread with its own socket, so a busy main thread is not 'lost'."""
        self._hb_stop = threading.Event()
        self._hb = threading.Thread(target=self._beat, name="flowlaunch-heartbeat", daemon=True)
        self._hb.start()

    def _beat(self) -> None:
        comm = connect(self._endpoint, "dealer", security=self.security, linger_ms=0,
                       name=f"rank {self.rank}'s heartbeat comm", plane="control")
        try:
            while not self._hb_stop.wait(HEARTBEAT_EVERY):
                comm.send(CTRL, {"t": "hb", "rank": self.rank, "pieces": self.pieces})
        finally:
            comm.close()

    def close(self) -> None:
        if self._hb is not None:
            self._hb_stop.set()
            self._hb.join(2.0)
        self._comm.close(1000)

    # -- internals -------------------------------------------------------------------------
    def _pump(self, timeout: float) -> None:
        now = time.monotonic()
        if now - self._last_tx >= HEARTBEAT_EVERY and self._connected:
            self.send("hb", pieces=self.pieces)
        m = self._recv(timeout)
        if m is not None:
            while m is not None:
                self._inbox.append(m)
                m = self._recv(0)
            self._last_rx = time.monotonic()
        elif self._connected and time.monotonic() - self._last_rx > self.master_timeout:
            raise LaunchError(f"rank {self.rank} lost the master at {self.where}: no message "
                              f"for {time.monotonic() - self._last_rx:.1f}s")

    def _wait_raw(self, types: set[str], timeout: float, first: bool) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                if first:
                    raise LaunchError(
                        f"rank {self.rank} could not reach the master at {self.where} within "
                        f"{timeout:.1f}s (is rank 0 running? check MASTER_ADDR/MASTER_PORT)")
                raise WaitTimeout(f"rank {self.rank} waited {timeout:.1f}s for a clock reply "
                                  f"from {self.where}")
            msg = self._recv(min(left, 0.1))
            if msg is not None:
                self._last_rx = time.monotonic()
                self._connected = True
                if msg["t"] in types:
                    return msg
                if msg["t"] != "hb":
                    self._inbox.append(msg)

    def _recv(self, timeout: float) -> dict | None:
        m = self._comm.recv(timeout)
        if m is None:
            return None
        try:
            return body_of(m, f"the master at {self.where}")
        except MalformedMessage as e:
            raise LaunchError(f"rank {self.rank}: {e}") from e
