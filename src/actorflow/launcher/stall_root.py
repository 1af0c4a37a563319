"""A stall's root cause from every rank's flight dump, not from whichever rank spoke first.

Each rank's watchdog sees only its own actors.  The rank that holds the stuck actor names
it; the others can only name a local actor that waits across the wire.  Which error reaches
the master first is timing (a loaded box, a slow dump), so on a stall the launcher merges
the newest dump of every worker it started (each worker dumps once when it stalls, fails or
is aborted by the master) and runs why-stuck on the union: its root names the machine,
unit and op of the actor every other one waits for, the same whoever failed first.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path

from actorflow.errors import TraceError
from actorflow.trace.tracefile import load_dump
from actorflow.trace.whystuck import StuckReport, analyze_dumps

STALL_KINDS = ("StallError",)  # the master error kinds a merged why-stuck can explain
DUMP_GRACE = 3.0  # s more than the settle time the ranks get to dump after a stall


def dumped(dirs: Sequence[Path]) -> dict[int, set[str]]:
    """pid -> the reasons it dumped for, read from the file names only (cheap enough to
    poll): ``flight-<reason>-<pid>[-<tag>]-<n>.afdump``, the reason without dashes."""
    out: dict[int, set[str]] = {}
    for d in dirs:
        if not d.is_dir():
            continue
        for f in d.rglob("flight-*.afdump"):
            parts = f.name.split("-")
            if len(parts) >= 4 and parts[2].isdigit():
                out.setdefault(int(parts[2]), set()).add(parts[1])
    return out


def awaiting_dumps(dirs: Sequence[Path], children: Collection[int],
                   running: Collection[int]) -> bool:
    """True while a rank of this run stalled and some running rank has not dumped yet:
    the merged root cause needs every machine's actors, whoever spoke first."""
    seen = dumped(dirs)
    if not any("stalled" in seen.get(pid, ()) for pid in children):
        return False
    return any(pid not in seen for pid in running)


def newest_dumps(dirs: Sequence[Path], pids: Collection[int]) -> list[dict]:
    """The newest readable dump of each process in ``pids`` found under ``dirs``."""
    per_pid: dict[int, dict] = {}
    for d in dirs:
        if not d.is_dir():
            continue
        for f in d.rglob("*.afdump"):
            try:
                doc = load_dump(f)
            except (TraceError, OSError):
                continue  # half-written by a process killed mid-dump: no evidence
            pid = int(doc.get("pid", -1))
            if pid in pids and (pid not in per_pid
                                or doc["time_ns"] > per_pid[pid]["time_ns"]):
                per_pid[pid] = doc
    return sorted(per_pid.values(), key=lambda doc: doc["time_ns"])


def merged_root(dirs: Sequence[Path], pids: Collection[int]
                ) -> tuple[StuckReport, int] | None:
    """why-stuck over every worker's newest dump, and the machine to blame: the root's, or
    for a deadlock the first actor's of the cycle.  None when there is no dump, or the root
    still waits on a task no dump holds (a worker died before dumping, or ran on another
    host): then the caller keeps the master's first error."""
    dumps = newest_dumps(dirs, pids)
    if not dumps:
        return None
    report = analyze_dumps(dumps)
    if report.root is not None and not report.remote:
        machine = report.root.get("machine")
    elif report.cycle:
        tasks = {t: info for d in dumps for t, info in d.get("tasks", {}).items()}
        machine = tasks.get(report.cycle[0], {}).get("machine_id")
    else:
        return None
    return (report, int(machine)) if machine is not None else None
