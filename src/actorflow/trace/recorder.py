"""Recorders: the hooks the runtime calls, one small object per execution unit.

The runtime asks ``recorder.unit((machine_id, thrd_id))`` once per unit and uses it as:

* ``unit.ring`` (flight recorder; always on): a bare ``deque.append`` of the messages
  the runtime made anyway: every message handed to an actor and every message sent to
  another unit.  Nothing is built per step, and only ``flight_size`` messages per unit
  stay alive: keeping each step's ``(message, actions)`` pair, as an earlier version did,
  or the ``Act`` objects (each with lists of slot tuples) cost +5-8% CPU on empty kernels
  just by keeping that many objects alive (measured in bench/README.md, "Trace").  Acts
  show in a dump as the READY messages they sent and, while running, in the actors'
  states (``inflight_pieces``).  Sends between actors of one unit are not stored twice:
  they are the unit's own receives.  Rows are built only when the ring is dumped.
* ``unit.timed`` (full tracing, ``trace_dir``): when true the runtime calls ``send(msg)``,
  ``recv(msg)``, ``act_begin(act)``, ``act_end(act)``; each packs the event's timestamp and
  integer fields as int64 words (``packed.py``) into a bytearray that is flushed to the
  machine's trace file (``tracefile.TraceWriter``) whenever it holds ``buffer_size``
  events' worth.

With no recorder at all the runtime makes no calls (``MachineRuntime(recorder=None)``).
"""

from __future__ import annotations

import os
import struct
import threading
import time
from collections import deque
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from actorflow.errors import TraceError
from actorflow.trace.events import (
    ACT_BEGIN,
    ACT_DEVICE,
    ACT_END,
    CMD,
    RECV,
    SEND,
    message_row,
)
from actorflow.trace.packed import MSG_WORDS, decode_chunk
from actorflow.trace.tracefile import TraceWriter, plan_info, write_dump

FLIGHT_SIZE = 1024
BUFFER_SIZE = 8192


class FlightUnit:
    """Always-on ring of one unit: its last ``size`` messages, the runtime's own objects."""

    timed = False

    def __init__(self, key: tuple[int, int], size: int = FLIGHT_SIZE,
                 hosted: Iterable[int] | None = None) -> None:
        """``hosted``: the unit's task ids (tells a received message from a sent one)."""
        self.key = key
        self.size = size
        self.hosted = set(hosted) if hosted is not None else None
        self.buf: deque = deque(maxlen=size)
        self.ring = self.buf.append

    def rows(self) -> list[tuple]:
        """The ring as event rows (``t`` = -1: the ring keeps order, not time): a message
        to a task of this unit is a RECV, any other one a SEND."""
        msgs = _snapshot(self.buf)
        hosted = self.hosted
        if hosted is None:  # no plan: receivers are the tasks that received a command
            hosted = {m.dst for m in msgs if m.type == CMD}
        return [message_row(RECV if m.dst in hosted else SEND, -1, m) for m in msgs]

    def marker(self) -> Any:
        """The newest entry (an object): changes whenever the unit made a step."""
        try:
            return self.buf[-1]
        except IndexError:
            return None

    def flush(self) -> None:
        pass

    # the per-event hooks of a timed unit: a flight unit is not timed, so the runtime never
    # calls them (the ring sees the same messages); here so both units share one interface
    def send(self, msg: Any) -> None:
        pass

    def recv(self, msg: Any) -> None:
        pass

    def act_begin(self, act: Any) -> None:
        pass

    def act_end(self, act: Any) -> None:
        pass

    def act_device(self, act: Any, launch_ns: int, device_ns: int) -> None:
        pass


class TraceUnit:
    """Full tracing: every event timestamped and packed as int64 words (``packed.py``) into
    a bytearray, flushed to the machine's trace file whenever ``buffer_size`` events' worth
    piled up.  Packing with ``struct`` at the hook is cheaper overall than keeping objects
    and converting them at flush time."""

    timed = True
    ring = None

    def __init__(self, key: tuple[int, int], writer: TraceWriter, size: int = FLIGHT_SIZE,
                 buffer_size: int = BUFFER_SIZE) -> None:
        self.key = key
        self.size = size
        self.writer = writer
        self.buffer_size = buffer_size
        self.buf = buf = bytearray()
        self.cmds: dict[int, tuple[str, Any]] = {}  # word offset -> CMD name, payload
        self.last_chunk: tuple[bytes, dict] = (b"", {})  # for dumps after a flush
        self.flushed = 0  # bytes written so far (with len(buf): the progress marker)
        cmds, cap = self.cmds, buffer_size * MSG_WORDS * 8
        now = time.perf_counter_ns
        msg, end, begin, pair = (struct.Struct(f"={n}q").pack for n in (MSG_WORDS, 5, 7, 2))
        device = struct.Struct("=7q").pack
        lock = threading.Lock()

        def flush() -> None:
            with lock:  # the unit thread and a closing client may both flush
                chunk, ccmds = bytes(buf), dict(cmds)
                del buf[:len(chunk)]
                cmds.clear()
                self.last_chunk = (chunk, ccmds)
                self.flushed += len(chunk)
            if chunk:
                writer.write_packed(key, chunk, [[k, c, p] for k, (c, p) in ccmds.items()])

        def send(m: Any) -> None:
            buf.extend(msg(SEND, now(), m.type, m.src, m.dst, m.regst_desc_id, m.slot,
                           m.piece_id, m.seq, m.msg_id))
            if len(buf) >= cap:
                flush()

        def recv(m: Any) -> None:
            if m.type == CMD:  # client commands carry a name and an argument
                cmds[len(buf) // 8] = (m.cmd_name, m.arg)
            buf.extend(msg(RECV, now(), m.type, m.src, m.dst, m.regst_desc_id, m.slot,
                           m.piece_id, m.seq, m.msg_id))
            if len(buf) >= cap:
                flush()

        def act_begin(a: Any) -> None:
            r, w = a.reads, a.writes
            buf.extend(begin(ACT_BEGIN, now(), a.task_id, a.act_id, a.piece_id, len(r), len(w)))
            for p in r:
                buf.extend(pair(*p))
            for p in w:
                buf.extend(pair(*p))

        def act_end(a: Any) -> None:
            buf.extend(end(ACT_END, now(), a.task_id, a.act_id, a.piece_id))
            if len(buf) >= cap:
                flush()

        def act_device(a: Any, launch_ns: int, device_ns: int) -> None:
            buf.extend(device(ACT_DEVICE, now(), a.task_id, a.act_id, a.piece_id, launch_ns,
                              device_ns))

        self.send, self.recv, self.act_begin, self.act_end = send, recv, act_begin, act_end
        self.act_device = act_device
        self.flush = flush

    def rows(self) -> list[list]:
        recent = decode_chunk(bytes(self.buf), _cmd_list(self.cmds))
        if len(recent) < self.size:
            chunk, ccmds = self.last_chunk
            recent = decode_chunk(chunk, _cmd_list(ccmds)) + recent
        return recent[-self.size:]

    def marker(self) -> Any:
        return self.flushed + len(self.buf)


def _cmd_list(cmds: dict[int, tuple[str, Any]]) -> list:
    return [[k, c, p] for k, (c, p) in dict(cmds).items()]


def _snapshot(d: deque) -> list:
    """Copy a deque another thread may be appending to (retry on concurrent mutation)."""
    for _ in range(100):
        try:
            return list(d)
        except RuntimeError:
            continue
    return []


class Recorder:
    """The recorder of one process: flight recorder always, full tracing with ``trace_dir``.

    ``plan`` supplies task names for dumps and is saved next to the trace (``plan.plan``)
    so that export, summary and replay need nothing else.  ``clock_offset``/``clock_error``
    (seconds, master clock - local clock, from the rendezvous) are written into every
    trace file; ``tag`` distinguishes several processes of one machine (process units);
    ``plan_file`` names the saved plan (one per worker: ``plan-m<rank>.plan``).
    """

    def __init__(
        self,
        plan: Any = None,
        trace_dir: str | os.PathLike | None = None,
        flight_size: int = FLIGHT_SIZE,
        buffer_size: int = BUFFER_SIZE,
        clock_offset: float = 0.0,
        clock_error: float = 0.0,
        tag: str = "",
        dump_dir: str | os.PathLike | None = None,
        plan_file: str = "plan.plan",
    ) -> None:
        self.plan = plan
        self.trace_dir = Path(trace_dir) if trace_dir is not None else None
        self.flight_size = flight_size
        self.buffer_size = buffer_size
        self.clock_offset = clock_offset
        self.clock_error = clock_error
        self.tag = tag
        self.dump_dir = Path(dump_dir) if dump_dir is not None else None
        self.units: dict[tuple[int, int], FlightUnit | TraceUnit] = {}
        self.writers: dict[int, TraceWriter] = {}
        self.dumps: list[Path] = []
        self._lock = threading.Lock()
        self._closed = False
        if self.trace_dir is not None:
            try:
                self.trace_dir.mkdir(parents=True, exist_ok=True)
                if plan is not None:
                    from actorflow.plan.io import save_plan

                    save_plan(plan, self.trace_dir / plan_file)
            except OSError as e:
                raise TraceError(f"{self.trace_dir}: cannot write the trace directory: "
                                 f"{e.strerror or e}") from e

    @property
    def tracing(self) -> bool:
        return self.trace_dir is not None

    def trace_config(self) -> dict | None:
        """What a child process (a process unit) needs to trace into the same directory."""
        if self.trace_dir is None:
            return None
        return {"dir": str(self.trace_dir), "clock_offset": self.clock_offset,
                "clock_error": self.clock_error, "flight_size": self.flight_size}

    @classmethod
    def from_config(cls, cfg: dict | None, plan: Any, tag: str) -> Recorder | None:
        """The recorder of a child process from ``trace_config()`` (None: not tracing)."""
        if not cfg:
            return None
        return cls(plan, trace_dir=cfg["dir"], clock_offset=float(cfg["clock_offset"]),
                   clock_error=float(cfg["clock_error"]),
                   flight_size=int(cfg.get("flight_size", FLIGHT_SIZE)), tag=tag,
                   plan_file=f"plan-{tag}.plan")

    def unit(self, key: tuple[int, int]) -> FlightUnit | TraceUnit:
        """The hooks of unit ``key = (machine_id, thrd_id)`` (made once per unit)."""
        with self._lock:
            u = self.units.get(key)
            if u is None:
                if self.trace_dir is None:
                    u = FlightUnit(key, self.flight_size, self._hosted(key))
                else:
                    u = TraceUnit(key, self._writer(key[0]), self.flight_size, self.buffer_size)
                self.units[key] = u
            return u

    def adopt(self, key: tuple[int, int], unit: Any) -> None:
        """A unit that records itself (the compiled core's loop: ``actors/native_trace.py``)
        takes the place of the recorder's own unit object; it offers the same ``rows``,
        ``marker`` and ``flush``, so dumps and trace files are the same."""
        with self._lock:
            self.units[key] = unit

    def _hosted(self, key: tuple[int, int]) -> set[int] | None:
        tasks = getattr(self.plan, "tasks", None)
        if tasks is None:
            return None
        return {t.task_id for t in tasks if (t.machine_id, t.thrd_id) == tuple(key)}

    def _writer(self, machine_id: int) -> TraceWriter:
        w = self.writers.get(machine_id)
        if w is None:
            assert self.trace_dir is not None
            name = f"machine-{machine_id}" + (f"-{self.tag}" if self.tag else "") + ".aftrace"
            w = self.writers[machine_id] = TraceWriter(
                self.trace_dir / name, machine_id, self.clock_offset, self.clock_error)
        return w

    def set_clock(self, offset: float, error: float) -> None:
        """Offset (master - local, seconds) and its error bound, once the rendezvous knows."""
        self.clock_offset, self.clock_error = offset, error
        for w in self.writers.values():
            w.set_clock(offset, error)

    def markers(self) -> list[Any]:
        """The newest entry of every unit: the watchdog's progress signal (compare by ``is``)."""
        return [u.marker() for u in list(self.units.values())]

    def flight_rows(self) -> dict[tuple[int, int], list[tuple] | list[list]]:
        return {k: u.rows() for k, u in list(self.units.items())}

    def dump(self, reason: str, states: Iterable[dict], error: str = "",
             directory: str | os.PathLike | None = None) -> Path:
        """Write the flight recorder and every actor's state; returns the dump file."""
        states = list(states)
        d = Path(directory) if directory is not None else self.default_dump_dir()
        if d.parent == dumps_root():
            prune_dumps(keep=None)  # make room: the newest runs' dumps stay
        path = write_dump(d, reason, states, self.flight_rows(), plan_info(self.plan),
                          error=error, clock=(self.clock_offset, self.clock_error), tag=self.tag)
        for w in list(self.writers.values()):
            w.write_states(reason, [s for s in states if s.get("machine_id") == w.machine_id])
        self.dumps.append(path)
        return path

    def default_dump_dir(self) -> Path:
        if self.dump_dir is not None:
            return self.dump_dir
        if self.trace_dir is not None:
            return self.trace_dir
        return default_dump_dir(os.getpid())

    def close(self) -> None:
        """Flush every unit's buffer and finish the trace files (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        for u in list(self.units.values()):
            u.flush()
        for w in self.writers.values():
            w.close()


KEEP_DUMPS = 20  # runs whose flight dumps stay in the default directory (ACTORFLOW_KEEP_DUMPS)


def dumps_root() -> Path:
    import tempfile

    return Path(tempfile.gettempdir()) / "actorflow-dumps"


def default_dump_dir(pid: int) -> Path:
    """Where a process with no trace dir writes flight dumps (``why-stuck --pid`` looks here)."""
    base = os.environ.get("ACTORFLOW_DUMP_DIR")
    if base:
        return Path(base) / str(pid)
    return dumps_root() / str(pid)


def prune_dumps(keep: int | None = None, root: Path | None = None) -> list[Path]:
    """Remove all but the newest ``keep`` runs' dump directories (one per launcher or
    Session process) from the default root, so dumps do not pile up forever; returns
    what was removed.  ``keep`` defaults to ``$ACTORFLOW_KEEP_DUMPS`` or 20."""
    import shutil

    if keep is None:
        try:
            keep = int(os.environ.get("ACTORFLOW_KEEP_DUMPS", KEEP_DUMPS))
        except ValueError:
            keep = KEEP_DUMPS
    root = dumps_root() if root is None else root
    try:
        runs = [d for d in root.iterdir() if d.is_dir()]
        runs.sort(key=lambda d: d.stat().st_mtime, reverse=True)
    except OSError:
        return []
    removed = []
    for d in runs[max(keep, 0):]:
        shutil.rmtree(d, ignore_errors=True)
        removed.append(d)
    return removed
