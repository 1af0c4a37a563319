"""Start, watch and tear down a launcher's child processes (workers, ssh, SPMD ranks).

Each child runs in its own process group (so its own children die with it) and, on Linux,
with ``PR_SET_PDEATHSIG`` so it gets SIGTERM if the launcher itself dies.  A reader thread
per child writes its output, merged, to ``<log_dir>/rank<N>.log`` and to the console with a
``[rank N]`` prefix, and remembers the first error line for the failure table.
Teardown: SIGTERM to every group, SIGKILL after ``grace`` seconds.
"""

from __future__ import annotations

import ctypes
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

_ERROR_RE = re.compile(r"(error:|Error\b|Exception\b|Traceback|failed|Killed)")
_PR_SET_PDEATHSIG = 1


_LIBC: ctypes.CDLL | None
try:
    _LIBC = ctypes.CDLL(None, use_errno=True)  # loaded here: a forked child must not dlopen
except OSError:
    _LIBC = None


def _die_with_parent() -> None:  # runs in the child between fork and exec
    # SIGTERM, not SIGKILL: a worker orphaned by a killed launcher still closes its units
    # and unlinks its shared memory on the way out.
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


@dataclass
class Child:
    rank: int
    host: str
    argv: list[str]
    popen: subprocess.Popen
    log: IO[str] | None
    started: float
    exit_code: int | None = None
    ended: float = 0.0
    first_error: str = ""
    in_traceback: bool = False
    tail: deque = field(default_factory=lambda: deque(maxlen=20))
    reader: threading.Thread | None = None

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def failed(self) -> bool:
        return self.exit_code is not None and self.exit_code != 0

    def status(self) -> str:
        """``exit 1`` / ``signal SIGKILL`` / ``running``."""
        if self.exit_code is None:
            return "running"
        if self.exit_code < 0:
            try:
                return f"signal {signal.Signals(-self.exit_code).name}"
            except ValueError:
                return f"signal {-self.exit_code}"
        return f"exit {self.exit_code}"


class Supervisor:
    def __init__(self, log_dir: str | None = None, console: IO[str] | None = None,
                 grace: float = 2.0) -> None:
        self.log_dir = Path(log_dir) if log_dir else None
        if self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
        self.console = console if console is not None else sys.stdout
        self.grace = grace
        self.children: list[Child] = []
        self._console_lock = threading.Lock()
        self.muted = False  # after Ctrl-C: ranks' goodbyes go to their logs, not the console

    # -- starting --------------------------------------------------------------------------
    def spawn(self, rank: int, host: str, argv: list[str], env: dict[str, str],
              stdin_link: bool = False, stdin_data: bytes | None = None) -> Child:
        """Start one child.  ``stdin_link``: give it a stdin pipe that we close only at
        teardown (or by dying), so a remote worker behind ssh sees EOF and stops;
        ``stdin_data`` (the cluster key line) is written into it first."""
        log = None
        if self.log_dir is not None:
            log = open(self.log_dir / f"rank{rank}.log", "w", buffering=1)
        stdin = subprocess.PIPE if stdin_link else subprocess.DEVNULL
        popen = subprocess.Popen(
            argv, env=env, stdin=stdin, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=_die_with_parent)
        if stdin_data is not None and popen.stdin is not None:
            try:
                popen.stdin.write(stdin_data)
                popen.stdin.flush()
            except OSError:
                pass  # it died at once: poll() reports it like any other exit
        child = Child(rank, host, argv, popen, log, time.monotonic())
        self.children.append(child)
        self.start_readers()
        return child

    def fork_worker(self, rank: int, host: str, worker_args: list[str],
                    env: dict[str, str]) -> Child:
        """Fork ``flowlaunch worker`` from this (warm) process (``forked.py``).  Its log
        reader starts with ``start_readers()``, after the last fork: fork with no thread."""
        from actorflow.launcher.forked import fork_worker

        log = None
        if self.log_dir is not None:
            log = open(self.log_dir / f"rank{rank}.log", "w", buffering=1)
        proc = fork_worker(worker_args, env)
        argv = [sys.executable, "-m", "actorflow.launcher.cli", *worker_args]  # its equal
        child = Child(rank, host, argv, proc, log, time.monotonic())  # type: ignore[arg-type]
        self.children.append(child)
        return child

    def start_readers(self) -> None:
        """One thread per child that copies its output to the log and the console."""
        for child in self.children:
            if child.reader is None:
                child.reader = threading.Thread(target=self._read, args=(child,),
                                                name=f"flowlaunch-log-{child.rank}",
                                                daemon=True)
                child.reader.start()

    def _read(self, child: Child) -> None:
        assert child.popen.stdout is not None
        for raw in iter(child.popen.stdout.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip("\n")
            child.tail.append(line)
            if child.in_traceback and line[:1] not in (" ", "\t", ""):
                child.first_error = line.strip()  # the exception line ends a traceback
                child.in_traceback = False
            elif not child.first_error and _ERROR_RE.search(line):
                child.first_error = line.strip()
                child.in_traceback = line.startswith("Traceback")
            if child.log is not None:
                child.log.write(line + "\n")
            if self.muted:
                continue
            with self._console_lock:
                print(f"[rank {child.rank}] {line}", file=self.console, flush=True)
        child.popen.stdout.close()

    # -- watching --------------------------------------------------------------------------
    def poll(self) -> list[Child]:
        """Children that exited since the last call."""
        out = []
        for c in self.children:
            if c.exit_code is None:
                code = c.popen.poll()
                if code is not None:
                    c.exit_code, c.ended = code, time.monotonic()
                    out.append(c)
        return out

    def running(self) -> list[Child]:
        return [c for c in self.children if c.exit_code is None]

    def first_failure(self) -> Child | None:
        failed = [c for c in self.children if c.failed]
        return min(failed, key=lambda c: c.ended) if failed else None

    def wait_all(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while self.running():
            if time.monotonic() > deadline:
                return False
            self.poll()
            time.sleep(0.02)
        return True

    # -- stopping --------------------------------------------------------------------------
    def signal_all(self, sig: int) -> None:
        for c in self.children:
            try:
                os.killpg(c.pid, sig)  # the group outlives its leader: kill it even if dead
            except (ProcessLookupError, PermissionError):
                pass

    def teardown(self, grace: float | None = None) -> None:
        """SIGTERM every group, SIGKILL what is left after ``grace`` seconds; reap all."""
        grace = self.grace if grace is None else grace
        if self.running():
            self.signal_all(signal.SIGTERM)
            self.signal_all(signal.SIGCONT)  # a stopped (frozen) child must run to clean up
            self.wait_all(grace)
        self.signal_all(signal.SIGKILL)
        self.wait_all(5.0)
        self.close()

    def close(self) -> None:
        for c in self.children:
            if c.popen.stdin is not None and not c.popen.stdin.closed:
                c.popen.stdin.close()
            if c.reader is not None:
                c.reader.join(2.0)
            if c.log is not None and not c.log.closed:
                c.log.close()
