"""Test instruction types: a step that runs its operand on a stream, on two streams.

``test.main.step`` runs on ``cpu.compute``; ``test.side.step`` on a second CPU stream type
``test.side``, so dependency tests can order instructions across two streams.  ``Log``
records the starts and ends of steps in the order they happen (tests order by it, not by
a clock).
"""

from __future__ import annotations

import threading

from actorflow.eager import (
    STREAM_TYPES,
    InstructionType,
    StreamType,
    register_instruction_type,
    register_stream_type,
)


class Step(InstructionType):
    """operand: a function of the stream host, run on the stream."""

    def __init__(self, stream_type: str) -> None:
        self.stream_type = stream_type

    def compute(self, instr, host):
        instr.operand(host)


if "test.side" not in STREAM_TYPES:
    register_stream_type(StreamType("test.side", "cpu", "cpu"))
    register_instruction_type("test.main.step", Step("cpu.compute"))
    register_instruction_type("test.side.step", Step("test.side"))


WINDOW = 0.3  # s a held step leaves a broken scheduler to show itself (no assertion on it)


class Log:
    """Starts and ends of steps, in the order they happened."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.started: dict[str, threading.Event] = {}
        self.lock = threading.Lock()

    def mark(self, what: str, name: str) -> None:
        with self.lock:
            self.events.append((what, name))
        self.started.setdefault(name, threading.Event())
        if what == "start":
            self.started[name].set()

    def before(self, a: str, b: str) -> bool:
        """``a`` ended before ``b`` started."""
        return self.events.index(("end", a)) < self.events.index(("start", b))
