"""The process-wide eager environment (seed 000's ``Global<T>`` singletons).

``get_env()`` creates it on first use: the virtual machine (streams, workers, scheduler)
and, with ``ACTORFLOW_EAGER_TRACE=DIR``, a trace recorder.  At interpreter exit it is torn
down without hanging: pending work gets ``ACTORFLOW_EAGER_EXIT_TIMEOUT`` seconds (default
10) to finish, workers are stopped (they are daemon threads, so a kernel that never
returns cannot hold the exit), and anything left undone or any error nobody waited for
is reported on stderr.  The collective helper adds the process group here later.

Settings (environment): ``ACTORFLOW_EAGER_SCHEDULER`` = ``inline`` (default) | ``thread``;
``ACTORFLOW_EAGER_TIMEOUT`` = seconds a wait may block (default 300);
``ACTORFLOW_EAGER_FUSE=0`` turns fusion of element-wise chains off.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import Any

from actorflow.eager.vm import VirtualMachine
from actorflow.errors import UsageError


def _float_env(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        v = float(raw)
    except ValueError:
        raise UsageError(f"{name}={raw!r}: expected a number of seconds") from None
    if v <= 0:
        raise UsageError(f"{name}={raw!r}: expected a positive number of seconds")
    return v


class Env:
    def __init__(self, scheduler: str | None = None, fuse: bool | None = None,
                 core: str | None = None) -> None:
        if fuse is None:
            fuse = os.environ.get("ACTORFLOW_EAGER_FUSE", "1") != "0"
        self.vm = VirtualMachine(
            scheduler or os.environ.get("ACTORFLOW_EAGER_SCHEDULER", "inline"),
            timeout=_float_env("ACTORFLOW_EAGER_TIMEOUT", 300.0), fuse=fuse, core=core)
        self.tracer: Any = None
        trace_dir = os.environ.get("ACTORFLOW_EAGER_TRACE")
        if trace_dir:
            from actorflow.eager.tracing import Tracer

            self.tracer = Tracer(self.vm, trace_dir)

    def shutdown(self, timeout: float) -> list[str]:
        problems = self.vm.shutdown(timeout)
        if self.tracer is not None:
            self.tracer.close()
            self.tracer = None
        return problems


_ENV: Env | None = None
_LOCK = threading.Lock()
_ATEXIT = False


def get_env() -> Env:
    global _ENV, _ATEXIT
    env = _ENV
    if env is None:
        with _LOCK:
            if _ENV is None:
                _ENV = Env()
                if not _ATEXIT:
                    atexit.register(_at_exit)
                    _ATEXIT = True
            env = _ENV
    return env


def get_vm() -> VirtualMachine:
    env = _ENV
    return env.vm if env is not None else get_env().vm


def current_env() -> Env | None:
    return _ENV


def shutdown(timeout: float | None = None, scheduler: str | None = None,
             fuse: bool | None = None, core: str | None = None) -> list[str]:
    """Tear the environment down now (the next eager call makes a fresh one, with
    ``scheduler``, ``fuse`` and ``core`` if given); returns the problems found (see
    ``VirtualMachine.shutdown``)."""
    global _ENV
    with _LOCK:
        env, _ENV = _ENV, None
        if scheduler is not None or fuse is not None or core is not None:
            _ENV = Env(scheduler, fuse, core)
    if env is None:
        return []
    return env.shutdown(_float_env("ACTORFLOW_EAGER_EXIT_TIMEOUT", 10.0)
                        if timeout is None else timeout)


def _after_fork_in_child() -> None:
    """A forked child has none of the parent's worker threads: it starts its own Env on
    first use.  Tensors the parent had computed keep their values (the memory was copied);
    waiting for one that was still pending raises instead of waiting forever."""
    global _ENV, _LOCK
    if _ENV is not None:
        _ENV.vm.closed = _ENV.vm.forked = True
        _ENV.vm.closed_reason = "its VM belongs to the parent process (this one was forked)"
    _ENV, _LOCK = None, threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _at_exit() -> None:
    problems = shutdown()
    for p in problems:
        print(f"actorflow eager (exit): {p}", file=sys.stderr)
