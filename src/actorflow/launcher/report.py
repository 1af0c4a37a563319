"""What flowlaunch prints: the failure table, progress lines, the summary (text or JSON)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from actorflow.launcher.supervisor import Child


def failure_table(children: Sequence[Child], root: Child | None, root_line: str = "",
                  why: str = "the first failure") -> str:
    """One row per rank; the root cause (``why`` it is blamed) marked with ``*``."""
    rows = [("", "rank", "host", "pid", "exit", "first error line")]
    for c in sorted(children, key=lambda c: c.rank):
        line = root_line if (c is root and root_line) else c.first_error
        if c.failed and not line:
            line = _death(c)
        rows.append(("*" if c is root else "", str(c.rank), c.host, str(c.pid), c.status(),
                     line[:160]))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    out = []
    for r in rows:
        out.append("  ".join(v.ljust(w) for v, w in zip(r[:5], widths)) + "  " + r[5])
    if root is not None:
        out.append(f"root cause (*): rank {root.rank} on {root.host}, {why}")
    return "\n".join(s.rstrip() for s in out)


def root_cause(children: Sequence[Child], master_error: dict | None) -> tuple[Child | None, str]:
    """The failing child to blame and its line: the master's first error, else first exit."""
    if master_error:
        rank = master_error.get("rank")
        for c in children:
            if c.rank == rank:
                return c, str(master_error.get("message", "")).splitlines()[0]
    failed = [c for c in children if c.failed]
    if not failed:
        return None, ""
    first = min(failed, key=lambda c: c.ended)
    return first, _death(first) if (first.exit_code or 0) < 0 else first.first_error


def _death(c: Child) -> str:
    """What to say about a child that died without an error line of its own."""
    if (c.exit_code or 0) < 0:
        return f"killed by {c.status().split()[1]}"
    return c.tail[-1] if c.tail else "(no output)"


def headline(root: Child | None, line: str) -> str:
    """The one line that says why the run failed, naming the machine."""
    if root is None:
        return f"flowlaunch: run failed{': ' + line if line else ''}"
    return (f"flowlaunch: run failed: machine {root.rank} (rank {root.rank} on {root.host}, "
            f"pid {root.pid}): {line or root.status()}")


def progress_line(msg: dict, machines: int) -> str:
    pieces, elapsed = int(msg.get("pieces", 0)), float(msg.get("elapsed", 0.0))
    rate = pieces / elapsed if elapsed > 0 else 0.0
    per = msg.get("per_machine", {})
    parts = ", ".join(f"m{m} {per.get(str(m), 0)}" for m in range(machines))
    return f"progress: {pieces} pieces, {rate:.1f} pieces/s, {elapsed:.1f}s [{parts}]"


def summary_json(summary: dict, children: Sequence[Child], extra: dict[str, Any]) -> str:
    """ONE JSON object for scripts: pieces, wall seconds, pieces/s, per-machine status/exit."""
    machines = {m["rank"]: m for m in summary.get("machines", [])}
    per = []
    for c in sorted(children, key=lambda c: c.rank):
        m = machines.get(c.rank, {})
        per.append({"rank": c.rank, "host": c.host, "pid": c.pid, "status": m.get(
            "status", "unknown"), "exit_code": c.exit_code, "pieces": m.get("pieces", 0),
            "clock_offset": m.get("clock_offset", 0.0), "core": m.get("core", "?")})
    doc = {
        "ok": bool(extra.get("ok")), "pieces": summary.get("pieces", 0),
        "wall_seconds": summary.get("wall_seconds", 0.0),
        "pieces_per_second": summary.get("pieces_per_second", 0.0),
        "machines": per, "error": summary.get("error"),
        "clock_offsets": summary.get("clock_offsets", {}),
        "core": summary.get("core", "?"),
    }
    doc.update({k: v for k, v in extra.items() if k != "ok"})
    return json.dumps(doc, sort_keys=True)


def spmd_line(script: str, ranks: int, world: int, seconds: float, ok: bool) -> str:
    """SPMD mode's last line: the scripts have no pieces, so ranks and time."""
    where = f"{ranks} rank{'s' * (ranks > 1)}" + (f" of {world}" if world != ranks else "")
    return f"{script}: {where} in {seconds:.2f}s" + ("" if ok else "; FAILED")


def summary_line(job: str, n: int, summary: dict, extra: dict) -> str:
    """The last line of every mode (sim, run, worker, SPMD): what ran, how fast, ok or not."""
    line = (f"{job}: {summary.get('pieces', 0)} pieces on {n} machine{'s' * (n > 1)} in "
            f"{summary.get('wall_seconds', 0.0):.2f}s "
            f"({summary.get('pieces_per_second', 0.0):.1f} pieces/s, "
            f"{summary.get('core', '?')} core)")
    if "check" in extra:
        line += f"; {extra['check']}"
    if "out" in extra:
        line += f"; outputs saved to {extra['out']}"
    if not extra.get("ok"):
        line += "; FAILED"
    return line
