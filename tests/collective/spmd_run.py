"""A live SPMD run for attack tests: ``flowlaunch --nproc-per-node 3`` of the gated
all-reduce (``scripts/paced_all_reduce.py``), its output read on threads so every wait is
bounded, its ranks' pids and environments found through /proc, its results parsed.  With
``mid_gate`` the run pauses midway until the test creates that file, so an attack always
lands while the ranks are alive and inside a collective, never after the run ended."""

from __future__ import annotations

import json
import os
import queue
import threading
import time
from subprocess import Popen

from actorflow.transport.auth import ClusterKey
from tests.launcher.helpers import Launcher, tagged_pids

SCRIPT = os.path.join(os.path.dirname(__file__), "scripts", "paced_all_reduce.py")
N, ROUNDS = 3, 20
RUN_ENV = {"ROUNDS": str(ROUNDS),
           "ACTORFLOW_COLLECTIVE_SHM": "0"}  # the large all-reduce goes around the ring
TOTAL = ROUNDS * (10 + 4_999_950_000) * 6 + 3 * 100_005 * sum(range(ROUNDS))


class Lines:
    """The run's stdout and stderr, read on threads so every wait here is bounded."""

    def __init__(self, p) -> None:
        self.p = p
        self.seen: list[str] = []
        self.err: list[str] = []
        self._q: queue.Queue[str] = queue.Queue()
        self._threads = [threading.Thread(target=self._read, args=(p.stdout, self._q.put),
                                          daemon=True),
                         threading.Thread(target=self._read, args=(p.stderr, self.err.append),
                                          daemon=True)]
        for t in self._threads:
            t.start()

    @staticmethod
    def _read(stream, put) -> None:
        for line in stream:
            put(line)

    def wait(self, needle: str, count: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while sum(needle in s for s in self.seen) < count:
            try:
                self.seen.append(self._q.get(timeout=max(0.01, deadline - time.monotonic())))
            except queue.Empty:
                raise AssertionError(f"never saw {count} x {needle!r}: {self.seen}") from None

    def rest(self, timeout: float) -> str:
        """Wait for the run to end; its stderr."""
        self.p.wait(timeout=timeout)
        for t in self._threads:
            t.join(5)
        while not self._q.empty():
            self.seen.append(self._q.get())
        return "".join(self.err)


def start(flowlaunch: Launcher, port: int, *extra: str, gate: str = "", mid_gate: str = ""
          ) -> tuple[str, Popen, Lines]:
    """The run; with ``gate``, its last rank joins only once that file exists; with
    ``mid_gate``, it pauses midway (every rank says ``MIDWAY``) until that file exists."""
    tag, p = flowlaunch.start("--nproc-per-node", N, "--master-port", port, *extra, SCRIPT,
                              env={**RUN_ENV, "JOIN_GATE": gate, "MID_GATE": mid_gate})
    return tag, p, Lines(p)


def rank_pids(tag: str) -> dict[int, int]:
    """rank -> pid of the run's script processes (the launcher has no RANK variable)."""
    out = {}
    for pid in tagged_pids(tag):
        try:
            env = rank_env(pid)
        except OSError:
            continue
        if b"RANK" in env:
            out[int(env[b"RANK"])] = pid
    return out


def rank_env(pid: int) -> dict[bytes, bytes]:
    with open(f"/proc/{pid}/environ", "rb") as f:
        return dict(v.split(b"=", 1) for v in f.read().split(b"\0") if b"=" in v)


def run_key(pid: int) -> ClusterKey:
    """The run's key, read like any process of the same user can: from the key file a
    rank's environment names (an authenticated peer)."""
    return ClusterKey.read(rank_env(pid)[b"ACTORFLOW_CLUSTER_KEY"].decode())


def results(lines: Lines) -> dict[int, dict]:
    docs = [json.loads(s.split("RESULT ", 1)[1]) for s in lines.seen if "RESULT " in s]
    return {d["rank"]: d for d in docs}
