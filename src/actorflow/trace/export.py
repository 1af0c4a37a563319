"""Chrome trace JSON (opens in Perfetto / chrome://tracing) from a merged trace.

Layout: one process per machine (``pid = machine + 1``), one named thread track per actor
(``tid = task + 1``, named "task 3 relu [relu]").  Slices (``ph: X``):

* an act, from ACT_BEGIN to ACT_END, args: piece, reads/writes as ``desc:slot`` and, on
  device streams, ``launch_us`` (host) and ``device_us`` (between its events);
* a message handled by the actor (READY/ACK/EORD/CMD received), starting at its receive.

A slice is stretched to cover the messages its actor sends after it (an act's READY/ACK
go out when the act completes; an EORD goes out while a message is handled), so every
flow starts inside the sender's slice.  Every READY, ACK and EORD between actors is one
flow (``ph: s`` at the send inside the sender's slice, ``ph: f`` with ``bp: e`` at the
receive slice); ids are sequential and unique.  ``otherData.actorflow`` records the clock
offsets and their error bound, which ``check`` uses as its tolerance.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from actorflow.trace.events import (
    ACT_BEGIN,
    ACT_DEVICE,
    ACT_END,
    CMD,
    MSG_TYPE_NAMES,
    RECV,
    SEND,
    ActEvent,
)
from actorflow.trace.merge import Trace

FORMAT = "actorflow-chrome"
RECV_SLICE_NS = 1000  # a received message's slice lasts until its last send, at least 1 us


class _Slice:
    __slots__ = ("args", "end", "name", "start")

    def __init__(self, name: str, start: int, args: dict) -> None:
        self.name, self.start, self.end, self.args = name, start, start, args


def _us(ns: int) -> float:
    return ns / 1000.0


def track_name(trace: Trace, task_id: int) -> str:
    t = trace.tasks.get(task_id)
    if not t:
        return f"task {task_id}"
    ops = sorted(set(t.get("op_types") or [])) or [t["type"]]
    return f"task {task_id} {t['label']} [{', '.join(ops)}]"


def to_chrome(trace: Trace) -> dict[str, Any]:
    t0 = trace.t0
    end_of_run = trace.t1
    tracks: dict[int, list[_Slice]] = {}
    machine_of: dict[int, int] = {}
    current: dict[int, _Slice] = {}  # last slice of each actor (sends attach to it)
    open_acts: dict[tuple[int, int], _Slice] = {}
    send_at: dict[int, tuple[int, int, int]] = {}  # msg_id -> (task, t, type)
    recv_at: dict[int, tuple[int, int]] = {}
    for ev in trace.events:
        task = ev.task
        if task < 0:
            continue
        machine_of.setdefault(task, trace.tasks.get(task, {}).get("machine_id", ev.machine))
        if isinstance(ev, ActEvent):
            if ev.kind == ACT_BEGIN:
                s = _Slice(trace.act_names.get((task, ev.act_id)) or trace.label(task), ev.t, {
                    "piece": ev.piece, "act": ev.act_id,
                    "reads": [f"desc {d} slot {s}" for d, s in ev.reads],
                    "writes": [f"desc {d} slot {s}" for d, s in ev.writes]})
                tracks.setdefault(task, []).append(s)
                open_acts[(task, ev.act_id)] = current[task] = s
            elif ev.kind == ACT_END:
                begun = open_acts.pop((task, ev.act_id), None)
                if begun is not None:
                    begun.end = max(begun.end, ev.t)
            elif ev.kind == ACT_DEVICE:  # a device act: host launch and device time
                running = open_acts.get((task, ev.act_id))
                if running is not None:
                    running.args["launch_us"] = round(ev.launch_ns / 1e3, 2)
                    running.args["device_us"] = round(ev.device_ns / 1e3, 2)
            continue
        if ev.kind == RECV:
            name = f"{MSG_TYPE_NAMES[ev.type]}" + (f" {ev.cmd}" if ev.type == CMD else "")
            s = _Slice(name, ev.t, {"type": MSG_TYPE_NAMES[ev.type], "src": ev.src,
                                    "desc": ev.desc, "slot": ev.slot, "piece": ev.piece,
                                    "seq": ev.seq, "msg_id": ev.msg_id})
            tracks.setdefault(task, []).append(s)
            current[task] = s
            if ev.src >= 0:
                recv_at[ev.msg_id] = (task, ev.t)
        elif ev.kind == SEND:
            at = current.get(task)
            if at is None:  # nothing of this actor recorded before (flight recorder wrapped)
                at = current[task] = _Slice("send", ev.t, {})
                tracks.setdefault(task, []).append(at)
            at.end = max(at.end, ev.t)
            send_at[ev.msg_id] = (task, ev.t, ev.type)
    for s in open_acts.values():  # acts still running when the trace ended
        s.end = max(s.end, end_of_run)
        s.args["unfinished"] = True
    out: list[dict] = []
    for m in sorted(set(machine_of.values())):
        out.append({"ph": "M", "name": "process_name", "pid": m + 1, "tid": 0,
                    "args": {"name": f"machine {m}"}})
        out.append({"ph": "M", "name": "process_sort_index", "pid": m + 1, "tid": 0,
                    "args": {"sort_index": m}})
    for task, slices in sorted(tracks.items()):
        pid, tid = machine_of[task] + 1, task + 1
        out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                    "args": {"name": track_name(trace, task)}})
        out.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                    "args": {"sort_index": task}})
        slices.sort(key=lambda s: s.start)
        last_act: _Slice | None = None
        for i, s in enumerate(slices):
            if "act" in s.args:
                last_act = s
            else:  # a received message: at least 1 us, never past the next slice
                nxt = slices[i + 1].start if i + 1 < len(slices) else s.start + RECV_SLICE_NS
                s.end = max(s.end, min(s.start + RECV_SLICE_NS, nxt))
                if last_act is not None and s.start <= last_act.end:
                    s.end = min(s.end, last_act.end)  # nested in a running act (async stream)
            out.append({"ph": "X", "name": s.name, "cat": "act" if "act" in s.args else "msg",
                        "pid": pid, "tid": tid, "ts": _us(s.start - t0),
                        "dur": _us(s.end - s.start), "args": s.args})
    flows = 0
    for mid, (stask, st, mtype) in send_at.items():
        r = recv_at.get(mid)
        if r is None:
            continue
        rtask, rt = r
        ev_type = MSG_TYPE_NAMES[mtype]
        flows += 1
        common = {"name": ev_type, "cat": ev_type, "id": flows}
        out.append({"ph": "s", **common, "pid": machine_of[stask] + 1, "tid": stask + 1,
                    "ts": _us(st - t0), "bp": "e", "args": {"msg_id": mid}})
        out.append({"ph": "f", **common, "pid": machine_of[rtask] + 1, "tid": rtask + 1,
                    "ts": _us(rt - t0), "bp": "e"})
    clock = {str(m): {"offset_ns": c.offset_ns, "error_ns": c.error_ns}
             for m, c in trace.machines.items()}
    max_err = max((c.error_ns for c in trace.machines.values()), default=0) * 2
    unmatched = len(set(send_at) ^ set(recv_at))
    return {"traceEvents": out, "displayTimeUnit": "ns", "otherData": {"actorflow": {
        "format": FORMAT, "version": 1, "t0_ns": t0, "clock": clock,
        "max_clock_error_us": max_err / 1000.0, "flows": flows, "unmatched_messages": unmatched,
    }}}


def export_chrome(trace: Trace, path: str | os.PathLike) -> dict[str, Any]:
    doc = to_chrome(trace)
    p = Path(path)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(json.dumps(doc, separators=(",", ":")))
    os.replace(tmp, p)
    return doc
