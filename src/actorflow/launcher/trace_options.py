"""``--trace`` and ``--stall-timeout``: the recording options of every command that runs a plan.

``sim``, ``run`` and ``worker`` add them; ``flowlaunch trace`` (``cmd_trace``) reads what
they recorded.  They live apart so running a plan does not import the trace reader.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from actorflow.errors import TraceError


def add_trace_options(p: argparse.ArgumentParser) -> None:
    """``--trace DIR`` and ``--stall-timeout SECONDS`` for commands that run a plan."""
    p.add_argument("--trace", metavar="DIR",
                   help="record every event; each machine writes DIR/machine-<m>.aftrace "
                        "(use a fresh DIR per run; read with `flowlaunch trace ...`)")
    p.add_argument("--stall-timeout", type=float, metavar="SECONDS",
                   help="watchdog: fail the run when no actor progressed for this long, "
                        "with a why-stuck report and a flight-recorder dump")


def trace_worker_args(args: argparse.Namespace) -> list[str]:
    """The same options, forwarded to every worker (the trace dir made absolute)."""
    out: list[str] = []
    if getattr(args, "trace", None):
        out += ["--trace", str(Path(args.trace).resolve())]
    if getattr(args, "stall_timeout", None) is not None:
        if args.stall_timeout <= 0:
            raise TraceError(f"--stall-timeout must be > 0 seconds, got {args.stall_timeout}")
        out += ["--stall-timeout", str(args.stall_timeout)]
    return out
