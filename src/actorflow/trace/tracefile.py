"""Trace and dump files: msgpack streams with a format name and schema version.  No pickle.

A trace file (``machine-<m>[-<tag>].aftrace``, one per machine and process) is a stream of
msgpack maps:

    {"format": "actorflow-trace", "version": 1, "machine_id", "pid",
     "anchor_wall_ns", "anchor_mono_ns", "clock_offset_ns", "clock_error_ns"}   header
    {"unit": [machine, thrd], "packed": bytes, "cmds": [...]}                  events
    {"states": [...], "reason": str, "t": mono_ns}                             a state dump
    {"tasks": {id: info}, "acts": {id: {act_id: name}}}       track names without a plan
    {"end": true, "clock_offset_ns", "clock_error_ns", "words": n}             footer

(The reader also takes ``{"unit": ..., "rows": [...]}`` event maps, rows as in
``events.from_row``: what a tool that edits a trace writes back.)

Event times are the recorder's ``perf_counter_ns``; ``anchor_*`` (read back to back at
start) turn them into wall-clock ns, and the clock offset puts them on the master's clock.
A flight dump (``flight-<reason>-<pid>-<n>.afdump``) is one map with format
``actorflow-dump`` holding every actor's state, the last events of every unit and the
plan's task names: all ``flowlaunch trace why-stuck`` needs.
"""

from __future__ import annotations

import itertools
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack

from actorflow.errors import TraceError

TRACE_FORMAT, DUMP_FORMAT, VERSION = "actorflow-trace", "actorflow-dump", 1
_dump_counter = itertools.count()


_ANCHOR: tuple[int, int, int] | None = None


def clock_anchor() -> tuple[int, int, int]:
    """(wall ns, perf_counter ns, error ns) read back to back; one per process, so files of
    one process share it exactly and only different processes add its error."""
    global _ANCHOR
    if _ANCHOR is None:
        best: tuple[int, int, int] | None = None
        for _ in range(7):
            a = time.perf_counter_ns()
            w = time.time_ns()
            b = time.perf_counter_ns()
            if best is None or b - a < best[2]:
                best = (w, (a + b) // 2, (b - a) // 2 + 1)
        assert best is not None  # the loop ran
        _ANCHOR = best
    return _ANCHOR


def _pack(obj: Any) -> bytes:
    return msgpack.packb(obj, use_bin_type=True)


class TraceWriter:
    """Appends msgpack maps to one trace file; thread-safe (units of a machine share it).

    The file is opened O_APPEND and unbuffered, each map one write: the compiled core's
    units write their chunks on the same file themselves (``fileno``), and the kernel
    appends every write whole.  ``on_close`` callbacks run before the footer (a native
    unit writes what it holds and stops writing)."""

    def __init__(self, path: Path, machine_id: int, clock_offset: float = 0.0,
                 clock_error: float = 0.0) -> None:
        self.path = path
        self.machine_id = machine_id
        self.words = 0
        self._lock = threading.RLock()  # a SIGUSR1 dump may interrupt a write on this thread
        self._clock = (clock_offset, clock_error)
        self._on_close: list[Callable[[], None]] = []
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND
                         | os.O_CLOEXEC, 0o644)
            self._f = open(fd, "wb", buffering=0)  # closed in close()
        except OSError as e:
            raise TraceError(f"{path}: cannot create trace file: {e.strerror or e}") from e
        wall, mono, anchor_err = clock_anchor()
        self._write({"format": TRACE_FORMAT, "version": VERSION, "machine_id": machine_id,
                     "pid": os.getpid(), "anchor_wall_ns": wall, "anchor_mono_ns": mono,
                     "anchor_error_ns": anchor_err, "byteorder": sys.byteorder,
                     "clock_offset_ns": int(clock_offset * 1e9),
                     "clock_error_ns": int(clock_error * 1e9)})

    def _write(self, obj: Any) -> None:
        data = memoryview(_pack(obj))
        with self._lock:
            if self._f.closed:
                return
            try:
                while data:
                    data = data[self._f.write(data) or 0:]
            except OSError as e:
                raise TraceError(f"{self.path}: cannot write the trace: "
                                 f"{e.strerror or e}") from e

    def fileno(self) -> int:
        """The file's descriptor (O_APPEND), for native units that write chunks themselves."""
        return self._f.fileno()

    def add_words(self, n: int) -> None:
        """Count ``n`` packed words that a native unit wrote itself (the footer's total)."""
        with self._lock:
            self.words += n

    def on_close(self, fn: Callable[[], None]) -> None:
        """Call ``fn`` before the footer is written (see the class doc)."""
        with self._lock:
            self._on_close.append(fn)

    def set_clock(self, offset: float, error: float) -> None:
        self._clock = (offset, error)

    def write_packed(self, unit: tuple[int, int], data: bytes, cmds: list) -> None:
        """Events as packed int64 words (``packed.py``) with the CMD names on the side."""
        self.words += len(data) // 8
        self._write({"unit": list(unit), "packed": data, "cmds": cmds})

    def write_names(self, tasks: dict[int, dict], acts: dict[int, dict[int, str]]) -> None:
        """Names of tracks (``plan_info``-shaped) and of single acts, for recordings that
        have no plan (the eager VM: a track per stream, an act per instruction)."""
        self._write({"tasks": tasks, "acts": acts})

    def write_states(self, reason: str, states: list[dict]) -> None:
        self._write({"states": states, "reason": reason, "t": time.perf_counter_ns()})

    def close(self) -> None:
        with self._lock:
            hooks, self._on_close = self._on_close, []
        for fn in hooks:
            fn()
        off, err = self._clock
        self._write({"end": True, "clock_offset_ns": int(off * 1e9),
                     "clock_error_ns": int(err * 1e9), "words": self.words})
        with self._lock:
            self._f.close()


def read_stream(path: Path, fmt: str) -> list[dict]:
    """Every map of a msgpack stream file, checking the format name and version first."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise TraceError(f"{path}: cannot read: {e.strerror or e}") from e
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False, max_buffer_size=0)
    unpacker.feed(data)
    try:
        objs = list(unpacker)
    except Exception as e:  # msgpack raises several unrelated types
        raise TraceError(f"{path}: not a {fmt} file (msgpack decode failed: {e})") from e
    if not objs or not isinstance(objs[0], dict) or objs[0].get("format") != fmt:
        raise TraceError(f"{path}: not a {fmt} file (expected a first map with format '{fmt}')")
    if objs[0].get("version") != VERSION:
        raise TraceError(f"{path}: {fmt} schema version {objs[0].get('version')!r} is not "
                         f"supported (this actorflow reads version {VERSION})")
    return objs


def plan_info(plan: Any) -> dict[int, dict]:
    """Task names, kinds, placement and regst wiring of a plan, as plain ids (for dumps)."""
    if plan is None:
        return {}
    info = {}
    for t in plan.tasks:
        ops = [n.kernel.op_name for n in t.exec_sequence]
        info[t.task_id] = {
            "label": t.label, "type": t.task_type, "machine_id": t.machine_id,
            "thrd_id": t.thrd_id, "ops": ops, "op_types": [n.kernel.op_type
                                                          for n in t.exec_sequence],
            "consumed": t.consumed_ids(),
            "produced": {d.regst_desc_id: {"register_num": d.register_num,
                                           "consumers": list(d.consumer_task_ids)}
                         for d in t.produced.values()},
        }
    return info


def write_dump(directory: Path, reason: str, states: list[dict], units: dict, tasks: dict,
               error: str = "", clock: tuple[float, float] = (0.0, 0.0), tag: str = "") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    n = next(_dump_counter)
    safe = "".join(c if c.isalnum() else "_" for c in reason)[:24]
    path = directory / f"flight-{safe}-{os.getpid()}{('-' + tag) if tag else ''}-{n}.afdump"
    doc = {
        "format": DUMP_FORMAT, "version": VERSION, "reason": reason, "error": error,
        "pid": os.getpid(), "time_ns": time.time_ns(), "mono_ns": time.perf_counter_ns(),
        "clock_offset_ns": int(clock[0] * 1e9), "clock_error_ns": int(clock[1] * 1e9),
        "tasks": tasks, "states": states,
        "units": [{"key": list(k), "rows": rows} for k, rows in sorted(units.items())],
    }
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(_pack(doc))
    os.replace(tmp, path)  # a reader never sees half a dump
    return path


def load_dump(path: str | os.PathLike) -> dict:
    """One flight dump file."""
    p = Path(path)
    doc = read_stream(p, DUMP_FORMAT)[0]
    doc["path"] = str(p)
    doc["tasks"] = {int(k): v for k, v in doc.get("tasks", {}).items()}
    return doc


def load_dumps(path: str | os.PathLike, window_s: float = 60.0) -> list[dict]:
    """A dump file, or from a directory the newest dump of every process that dumped within
    ``window_s`` of the newest one (one incident seen by every machine).  A directory with
    no dump of its own is searched below: a launcher's default dump directory holds one
    subdirectory per worker process."""
    p = Path(path)
    if not p.is_dir():
        return [load_dump(p)]
    files = list(p.glob("*.afdump")) or list(p.rglob("*.afdump"))
    docs = [load_dump(f) for f in files]
    if not docs:
        raise TraceError(f"{p}: no flight dump (*.afdump) in this directory")
    newest = max(d["time_ns"] for d in docs)
    per_pid: dict[int, dict] = {}
    for d in sorted(docs, key=lambda d: d["time_ns"]):
        if newest - d["time_ns"] <= window_s * 1e9:
            per_pid[d["pid"]] = d
    return sorted(per_pid.values(), key=lambda d: d["time_ns"])
