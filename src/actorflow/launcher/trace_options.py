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
    p.add_argument("--force", action="store_true",
                   help="record into a --trace DIR that already holds files (they mix with "
                        "this run's; `trace` tools would merge both)")
    p.add_argument("--stall-timeout", type=float, metavar="SECONDS",
                   help="watchdog: fail the run when no actor progressed for this long, "
                        "with a why-stuck report and a flight-recorder dump")


def check_trace_dir(args: argparse.Namespace, own: str | None = None) -> None:
    """Refuse a ``--trace`` directory holding another run's files unless ``--force``: the
    trace tools merge every file of a directory, so two runs would silently mix.  ``own``
    (a worker's ``machine-<rank>``) narrows the check to the files this process writes."""
    trace = getattr(args, "trace", None)
    if not trace or getattr(args, "force", False):
        return
    d = Path(trace)
    if not d.is_dir():
        return
    found = sorted(p.name for p in d.iterdir() if own is None or p.name.startswith(own))
    if found:
        raise TraceError(f"--trace {trace}: the directory is not empty ({len(found)} entries, "
                         f"e.g. {found[0]}); use a fresh directory, or pass --force to record "
                         "into it anyway")


def trace_worker_args(args: argparse.Namespace) -> list[str]:
    """The same options, forwarded to every worker (the trace dir made absolute)."""
    out: list[str] = []
    if getattr(args, "trace", None):
        out += ["--trace", str(Path(args.trace).resolve())]
        if getattr(args, "force", False):
            out.append("--force")
    if getattr(args, "stall_timeout", None) is not None:
        if args.stall_timeout <= 0:
            raise TraceError(f"--stall-timeout must be > 0 seconds, got {args.stall_timeout}")
        out += ["--stall-timeout", str(args.stall_timeout)]
    return out
