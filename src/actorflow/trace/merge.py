"""Put the trace files of a run (one or more per machine) on one timeline.

Each file's event times (``perf_counter_ns`` of its process) become wall-clock ns through
the file's anchor pair, then master-clock ns by adding the machine's clock offset (measured
at rendezvous, NTP-style; see ``clock.py``).  The offset's error bound travels with it so
checks can say "received before sent" only beyond what the clocks can promise.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from actorflow.errors import TraceError
from actorflow.trace.events import ACT_BEGIN, RECV, SEND, ActEvent, Event, MsgEvent, from_row
from actorflow.trace.packed import decode_chunk
from actorflow.trace.tracefile import TRACE_FORMAT, plan_info, read_stream


@dataclass
class MachineClock:
    machine_id: int
    offset_ns: int
    error_ns: int
    files: list[str] = field(default_factory=list)
    complete: bool = True  # every file had its footer (the process closed its recorder)


@dataclass
class Trace:
    """A merged run: events sorted by master-clock time, plus what names them."""

    events: list[Event]
    units: dict[tuple[int, int], list[Event]]  # per unit, in recorded order
    machines: dict[int, MachineClock]
    tasks: dict[int, dict]  # plan_info: label, type, ops, wiring
    plan: Any = None
    states: list[dict] = field(default_factory=list)
    act_names: dict[tuple[int, int], str] = field(default_factory=dict)  # (task, act) -> name

    @property
    def t0(self) -> int:
        return self.events[0].t if self.events else 0

    @property
    def t1(self) -> int:
        return self.events[-1].t if self.events else 0

    def label(self, task_id: int) -> str:
        t = self.tasks.get(task_id)
        return t["label"] if t else ("client" if task_id < 0 else f"task{task_id}")

    def error_ns(self, m1: int, m2: int) -> int:
        """How far apart two machines' clocks may still be after the offsets."""
        if m1 == m2:
            return 0
        e = self.machines
        return (e[m1].error_ns if m1 in e else 0) + (e[m2].error_ns if m2 in e else 0)

    def messages(self) -> dict[int, tuple[MsgEvent | None, MsgEvent | None]]:
        """msg_id -> (send event, receive event) for every actor-to-actor message."""
        out: dict[int, list] = {}
        for ev in self.events:
            if isinstance(ev, MsgEvent) and ev.src >= 0:
                pair = out.setdefault(ev.msg_id, [None, None])
                pair[0 if ev.kind == SEND else 1] = ev
        return {k: (v[0], v[1]) for k, v in out.items()}

    def causality_violations(self) -> list[str]:
        """Messages received before they were sent, beyond the clocks' error bound."""
        bad = []
        for mid, (s, r) in self.messages().items():
            if s is not None and r is not None and r.t < s.t - self.error_ns(s.machine,
                                                                            r.machine):
                bad.append(f"message {mid} ({r.describe()}) received {(s.t - r.t) / 1e3:.1f} us "
                           f"before it was sent (machines {s.machine}->{r.machine})")
        return bad


def load_trace(directory: str | os.PathLike) -> Trace:
    """Read and merge every ``*.aftrace`` file of a trace directory."""
    d = Path(directory)
    if not d.is_dir():
        raise TraceError(f"{d}: not a trace directory (run with --trace DIR or "
                         "Session(trace=DIR) to make one)")
    files = sorted(d.glob("*.aftrace"))
    if not files:
        raise TraceError(f"{d}: no trace files (*.aftrace) in this directory")
    plans = _load_plans(d)
    machines: dict[int, MachineClock] = {}
    units: dict[tuple[int, int], list[Event]] = {}
    states: list[dict] = []
    named: dict[int, dict] = {}
    act_names: dict[tuple[int, int], str] = {}
    for f in files:
        objs = read_stream(f, TRACE_FORMAT)
        head, foot = objs[0], next((o for o in objs[1:] if o.get("end")), None)
        try:
            m = int(head["machine_id"])
            src = foot if foot is not None else head
            off = int(src["clock_offset_ns"])
            err = int(src["clock_error_ns"]) + int(head.get("anchor_error_ns", 0))
            shift = int(head["anchor_wall_ns"]) - int(head["anchor_mono_ns"]) + off
        except (KeyError, TypeError, ValueError) as e:
            raise TraceError(f"{f}: trace header is corrupt: {type(e).__name__}: {e}") from e
        mc = machines.setdefault(m, MachineClock(m, off, err))
        mc.offset_ns, mc.error_ns = off, max(mc.error_ns, err)
        mc.files.append(f.name)
        mc.complete = mc.complete and foot is not None
        for o in objs[1:]:
            if "unit" in o:
                key = (int(o["unit"][0]), int(o["unit"][1]))
                try:
                    rows = o["rows"] if "rows" in o else decode_chunk(
                        o["packed"], o.get("cmds", []), head.get("byteorder", "little"))
                    units.setdefault(key, []).extend(from_row(r, key[0], key[1], shift)
                                                     for r in rows)
                except (KeyError, IndexError, TypeError, ValueError, TraceError) as e:
                    raise TraceError(f"{f}: corrupt events of unit {key}: {e}") from e
            elif "states" in o:
                states.extend(o["states"])
            elif "tasks" in o:  # a recording without a plan names its tracks itself
                named.update({int(k): v for k, v in o["tasks"].items()})
                for task, names in o.get("acts", {}).items():
                    act_names.update({(int(task), int(a)): n for a, n in names.items()})
    events = sorted((e for evs in units.values() for e in evs), key=_order)
    tasks: dict[int, dict] = dict(named)
    for p in plans:  # process units save one (sub-)plan each: their union names every task
        tasks.update(plan_info(p))
    plan = max(plans, key=lambda p: len(p.tasks), default=None)
    return Trace(events, units, machines, tasks, plan, states, act_names)


def _order(e: Event) -> tuple[int, int]:
    # at equal times a send sorts before its receive, an act begin before anything else
    rank = 0 if isinstance(e, ActEvent) and e.kind == ACT_BEGIN else (
        1 if e.kind == SEND else (2 if e.kind == RECV else 3))
    return (e.t, rank)


def _load_plans(d: Path) -> list[Any]:
    from actorflow.plan.io import load_plan

    return [load_plan(f, validate=False) for f in sorted(d.glob("plan*.plan"))]
