"""What the kernel says a process is doing: running, sleeping, stopped, zombie, or gone.

A SIGSTOPped process neither exits nor answers, so exit codes and sockets cannot tell it
from a slow one; its scheduler state can.  Watchers (the node over its unit processes,
the launcher over its ranks) use this to name a frozen process as the cause of a stall.
"""

from __future__ import annotations

import os

STOPPED = ("T", "t")  # stopped by a signal / by a tracer
FROZEN_ENV = "ACTORFLOW_FROZEN_AFTER"


def frozen_after(default: float = 1.0) -> float:
    """Seconds a process may stay stopped before a watcher fails the run and blames it
    (``ACTORFLOW_FROZEN_AFTER``; tests set it to order this check against a watchdog)."""
    try:
        value = float(os.environ.get(FROZEN_ENV, "") or default)
    except ValueError:
        return default
    return value if value > 0 else default


def proc_state(pid: int) -> str | None:
    """The state letter of ``/proc/<pid>/stat`` (``R``, ``S``, ``T``, ``Z`` ...), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def is_stopped(pid: int) -> bool:
    return proc_state(pid) in STOPPED
