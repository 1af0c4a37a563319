"""Test instruction types: a step that runs its operand on a stream, on two streams.

``test.main.step`` runs on ``cpu.compute``; ``test.side.step`` on a second CPU stream type
``test.side``, so dependency tests can order instructions across two streams.
"""

from __future__ import annotations

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
