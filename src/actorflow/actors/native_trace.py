"""The trace of a native unit: the compiled loop records, the recorder reads the same rows.

A unit on the native loop keeps its flight ring (the last messages, as records) or its
packed events (``trace/packed.py``'s int64 layouts) in C.  These two objects take the place
of ``trace.recorder``'s ``FlightUnit``/``TraceUnit`` in the process's ``Recorder``
(``Recorder.adopt``), so dumps, the watchdog's progress markers, ``flush`` and every
trace tool see what they saw before.
"""

from __future__ import annotations

import functools
import os
import platform
import threading
from typing import TYPE_CHECKING, Any

from actorflow.errors import TraceError
from actorflow.protocol.messages import CMD_NAMES, NONE
from actorflow.trace.events import RECV, SEND, message_row
from actorflow.trace.packed import decode_chunk
from actorflow.trace.tracefile import TraceWriter

if TYPE_CHECKING:
    from actorflow._core.unit_core import NativeUnitCore


class NativeFlight:
    """The flight ring of a native unit (the compiled loop keeps the records)."""

    timed = False
    ring = None

    def __init__(self, core: NativeUnitCore, key: tuple[int, int], size: int) -> None:
        self.core = core
        self.key = key
        self.size = size
        core.trace_flight(size)

    def rows(self) -> list[tuple]:
        _count, items = self.core.flight()
        return [message_row(RECV if recv else SEND, -1, m) for recv, m in items]

    def marker(self) -> Any:
        return self.core.flight_count

    def flush(self) -> None:
        pass


class NativeTrace:
    """Full tracing of a native unit: the loop packs the events and writes each sealed
    chunk to the machine's trace file itself (``_core/tracewrite.h``: the map
    ``TraceWriter.write_packed`` writes, with no Python and no GIL); ``flush`` writes the
    rest and counts the words for the file's footer."""

    timed = True
    ring = None

    def __init__(self, core: NativeUnitCore, key: tuple[int, int], writer: TraceWriter,
                 size: int, buffer_size: int) -> None:
        self.core = core
        self.key = key
        self.writer = writer
        self.size = size
        self._counted = 0  # bytes written by the core and counted in writer.words
        self._reported = False
        self._lock = threading.Lock()
        core.trace_timed(buffer_size, tsc=tsc_usable())
        core.trace_to_file(writer.fileno(), key[0], key[1], CMD_NAMES)
        writer.on_close(self._close)

    def flush(self) -> None:
        with self._lock:  # the unit's loop and a closing client may both flush
            err = self.core.trace_write()
            flushed = self.core.trace_flushed
            self.writer.add_words((flushed - self._counted) // 8)
            self._counted = flushed
        if err and not self._reported:  # once: the run fails on it, closing goes on
            self._reported = True
            raise TraceError(f"{self.writer.path}: cannot write the trace of unit "
                             f"{list(self.key)}: {os.strerror(err)}")

    def _close(self) -> None:
        """The file ends: write what is held, then no more (a late chunk stays in memory)."""
        try:
            self.flush()
        finally:
            self.core.trace_detach()

    def rows(self) -> list[list]:
        data, cmds = self.core.peek_trace()
        recent = decode_chunk(data, _named(cmds))
        if len(recent) < self.size:
            chunk, ccmds = self.core.last_trace()
            recent = decode_chunk(chunk, _named(ccmds)) + recent
        return recent[-self.size:]

    def marker(self) -> Any:
        return self.core.trace_flushed + self.core.trace_pending()


@functools.cache
def tsc_usable() -> bool:
    """Whether the native trace may stamp events with the TSC (``_core/tracebuf.h``): an
    x86-64 CPU whose TSC ticks at a constant rate through sleep states and that the kernel
    itself keeps time with (so every core's TSC agrees).  ``ACTORFLOW_TRACE_TSC=0``: never."""
    if os.environ.get("ACTORFLOW_TRACE_TSC", "1") == "0" or platform.machine() != "x86_64":
        return False
    try:
        with open("/sys/devices/system/clocksource/clocksource0/current_clocksource") as f:
            if f.read().strip() != "tsc":
                return False
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return {"constant_tsc", "nonstop_tsc"} <= flags
    except OSError:
        pass
    return False


def _named(cmds: list[list[int]]) -> list[list]:
    """[word, command code, aux] -> [word, command name, argument] (the recorder's side list)."""
    return [[w, CMD_NAMES[c] if 0 <= c < len(CMD_NAMES) else f"#{c}", None if a == NONE else a]
            for w, c, a in cmds]
