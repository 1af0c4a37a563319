"""Validate a Chrome trace JSON the way ``export`` promises to write it.

Checks: every event well formed; every process and every track that has events is named;
slices on one track nest properly; flow ids unique, each start has exactly one finish and
each finish one start; every flow start and finish lies inside a slice of its track; no
finish before its start beyond the recorded clock error.  Returns the problems found.
"""

from __future__ import annotations

import bisect
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from actorflow.errors import TraceError

EPS_US = 0.002  # float rounding of ns -> us


@dataclass
class CheckResult:
    problems: list[str] = field(default_factory=list)
    slices: int = 0
    flows: int = 0
    tracks: int = 0
    processes: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict:
        return {"ok": self.ok, "problems": self.problems, "slices": self.slices,
                "flows": self.flows, "tracks": self.tracks, "processes": self.processes}


def load_chrome(path: str | os.PathLike) -> dict:
    p = Path(path)
    try:
        doc = json.loads(p.read_text())
    except OSError as e:
        raise TraceError(f"{p}: cannot read: {e.strerror or e}") from e
    except ValueError as e:
        raise TraceError(f"{p}: not valid JSON: {e}") from e
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise TraceError(f"{p}: not a Chrome trace (expected an object with a traceEvents list)")
    return doc


def check_chrome(doc: dict[str, Any], limit: int = 50) -> CheckResult:
    res = CheckResult()
    probs = res.problems

    def bad(msg: str) -> None:
        if len(probs) < limit:
            probs.append(msg)

    meta = (doc.get("otherData") or {}).get("actorflow") or {}
    tol = float(meta.get("max_clock_error_us", 0.0)) + EPS_US
    proc_names, thread_names = set(), set()
    slices: dict[tuple, list[tuple[float, float]]] = {}
    starts: dict[Any, dict] = {}
    finishes: dict[Any, list[dict]] = {}
    for i, e in enumerate(doc["traceEvents"]):
        if not isinstance(e, dict) or "ph" not in e or "pid" not in e:
            bad(f"event #{i} is not an object with ph and pid: {str(e)[:80]}")
            continue
        ph, key = e["ph"], (e["pid"], e.get("tid"))
        if ph == "M":
            if e.get("name") == "process_name" and (e.get("args") or {}).get("name"):
                proc_names.add(e["pid"])
            elif e.get("name") == "thread_name" and (e.get("args") or {}).get("name"):
                thread_names.add(key)
            continue
        if not isinstance(e.get("ts"), (int, float)):
            bad(f"event #{i} ({ph} {e.get('name')}) has no numeric ts")
            continue
        if ph == "X":
            dur = e.get("dur")
            if not isinstance(dur, (int, float)) or dur < 0 or not e.get("name"):
                bad(f"slice #{i} on track {key} needs a name and a dur >= 0, got {dur!r}")
                continue
            slices.setdefault(key, []).append((float(e["ts"]), float(e["ts"]) + float(dur)))
        elif ph == "s":
            if e.get("id") in starts:
                bad(f"flow id {e.get('id')} starts twice")
            starts[e.get("id")] = e
        elif ph == "f":
            finishes.setdefault(e.get("id"), []).append(e)
        else:
            bad(f"event #{i}: unexpected phase {ph!r}")
    res.slices = sum(len(v) for v in slices.values())
    res.tracks = len(slices)
    res.processes = len({k[0] for k in slices})
    for key in sorted(slices, key=str):
        if key not in thread_names:
            bad(f"track pid={key[0]} tid={key[1]} has slices but no thread_name")
        if key[0] not in proc_names:
            bad(f"process pid={key[0]} has slices but no process_name")
    index = {}
    for key, sl in slices.items():
        sl.sort(key=lambda s: (s[0], -s[1]))
        stack: list[float] = []
        for a, b in sl:
            while stack and stack[-1] <= a + EPS_US:
                stack.pop()
            if stack and b > stack[-1] + EPS_US:
                bad(f"track pid={key[0]} tid={key[1]}: slice at {a:.3f} us overlaps its parent "
                    f"without nesting (ends at {b:.3f}, parent at {stack[-1]:.3f})")
            stack.append(b)
        index[key] = ([s[0] for s in sl], sl)

    def inside(e: dict) -> bool:
        found = index.get((e["pid"], e.get("tid")))
        if not found:
            return False
        keys, sl = found
        t = float(e["ts"])
        j = bisect.bisect_right(keys, t + EPS_US)
        # the enclosing slice starts at or before t; look back over a bounded nesting depth
        return any(sl[k][0] - EPS_US <= t <= sl[k][1] + EPS_US
                   for k in range(j - 1, max(j - 65, -1), -1))

    for fid, s in starts.items():
        fs = finishes.get(fid, [])
        if len(fs) != 1:
            bad(f"flow {fid} ({s.get('name')}) has {len(fs)} finishes, expected exactly 1")
            continue
        f = fs[0]
        if not inside(s):
            bad(f"flow {fid} ({s.get('name')}) starts at {s['ts']} us outside every slice of "
                f"track pid={s['pid']} tid={s.get('tid')}")
        if not inside(f):
            bad(f"flow {fid} ({f.get('name')}) ends at {f['ts']} us outside every slice of "
                f"track pid={f['pid']} tid={f.get('tid')}")
        if float(f["ts"]) < float(s["ts"]) - tol:
            bad(f"flow {fid} ({s.get('name')}) is received {float(s['ts']) - float(f['ts']):.3f} "
                f"us before it was sent (clock error bound {tol:.3f} us)")
    for fid in finishes:
        if fid not in starts:
            bad(f"flow {fid} finishes but never starts")
    res.flows = len(starts)
    if "flows" in meta and meta["flows"] != len(starts):
        bad(f"metadata says {meta['flows']} flows, found {len(starts)}")
    return res
