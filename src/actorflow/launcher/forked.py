"""Workers forked from a warm launcher: ``flowlaunch sim``'s start-up without N imports.

A fresh interpreter that imports numpy, pyzmq and the worker costs ~0.25 CPU-seconds; 16
of them on a 2-core host take seconds before the first one joins.  ``flowlaunch sim``
therefore imports the worker once and forks each machine from itself.  It forks before it
has any ZeroMQ context or thread of its own (the Monitor and the log readers start after
the last fork), and each child does what ``Supervisor.spawn`` arranges for an exec'd
worker: its own session (process group), ``PR_SET_PDEATHSIG``, stdin from /dev/null,
stdout and stderr into one pipe the launcher reads, the environment it was given.  It then
runs ``flowlaunch worker`` on the same argument list an exec'd worker gets, and leaves
with ``os._exit`` (the launcher's atexit handlers and buffers are not the child's).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import traceback
from typing import IO

# what a worker imports while it runs, loaded once in the launcher before forking
WARM_MODULES = ("numpy", "zmq", "msgpack", "actorflow.launcher.cmd_worker",
                "actorflow.launcher.worker", "actorflow.actors.node",
                "actorflow.actors.thread_hosting", "actorflow.actors.process_hosting",
                "actorflow.trace.diagnostics", "actorflow.plan.validate")


def warm_up() -> None:
    """Import what every forked worker would otherwise import on its own."""
    import importlib

    for name in WARM_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:  # a module renamed elsewhere: the worker imports what it needs
            pass


class ForkedWorker:
    """The parent's handle on a forked worker; the part of ``subprocess.Popen`` the
    Supervisor uses (``pid``, ``stdout``, ``stdin``, ``poll``, ``wait``, ``returncode``)."""

    stdin: IO[bytes] | None = None

    def __init__(self, pid: int, stdout: IO[bytes]) -> None:
        self.pid = pid
        self.stdout: IO[bytes] | None = stdout
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                self.returncode = -signal.SIGKILL  # reaped elsewhere: gone, cause unknown
                return self.returncode
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"forked worker {self.pid}", timeout or 0.0)
            time.sleep(0.01)
        assert self.returncode is not None
        return self.returncode


def fork_worker(worker_args: list[str], env: dict[str, str]) -> ForkedWorker:
    """Fork one ``flowlaunch worker`` with ``worker_args``; the child never returns."""
    r, w = os.pipe()
    for stream in (sys.stdout, sys.stderr):  # or the child writes the parent's buffer too
        stream.flush()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        _child(worker_args, env, r, w, parent)
    os.close(w)
    return ForkedWorker(pid, os.fdopen(r, "rb"))


def _child(worker_args: list[str], env: dict[str, str], r: int, w: int, parent: int) -> None:
    code = 1
    try:
        from actorflow.launcher.supervisor import _die_with_parent

        os.setsid()
        _die_with_parent()
        if os.getppid() != parent:  # the launcher died before PDEATHSIG was armed
            os._exit(1)
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1):
            signal.signal(s, signal.SIG_DFL)
        os.close(r)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        os.dup2(w, 1)
        os.dup2(w, 2)
        os.close(w)
        for stream in (sys.stdout, sys.stderr):
            if hasattr(stream, "reconfigure"):  # as PYTHONUNBUFFERED gives an exec'd one
                stream.reconfigure(line_buffering=True, write_through=True)
        os.environ.clear()
        os.environ.update(env)
        from actorflow.launcher.cli import main

        code = main(worker_args)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
