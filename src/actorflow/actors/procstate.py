"""What the kernel says a process is doing: running, sleeping, stopped, zombie, or gone.

A SIGSTOPped process neither exits nor answers, so exit codes and sockets cannot tell it
from a slow one; its scheduler state can.  Watchers (the node over its unit processes,
the launcher over its ranks) use this to name a frozen process as the cause of a stall.
"""

from __future__ import annotations

STOPPED = ("T", "t")  # stopped by a signal / by a tracer


def proc_state(pid: int) -> str | None:
    """The state letter of ``/proc/<pid>/stat`` (``R``, ``S``, ``T``, ``Z`` ...), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def is_stopped(pid: int) -> bool:
    return proc_state(pid) in STOPPED
