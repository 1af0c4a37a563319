"""Instructions, instruction types and stream types (seed 000's VM vocabulary).

An *instruction type* is registered by name (``cpu.compute``, ``cuda.h2d``, ...) and is
bound to one *stream type*; the VM runs every instruction of that type on a stream of
that type (one stream, with one worker, per stream type and device index).  Looking up an
unknown name is a ``RegistryError`` listing the known ones.  An *instruction* is one
unit of work: its type, its stream, what it reads and writes (blob objects), and where
the user's code issued it.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from actorflow.registry import Registry

if TYPE_CHECKING:
    from actorflow.eager.blob import BlobObject
    from actorflow.eager.worker import StreamRt


class StreamType:
    """A kind of stream: its device type and how to make its ``streams.Stream``."""

    def __init__(self, name: str, device_type: str, mem_case: str) -> None:
        self.name = name
        self.device_type = device_type
        self.mem_case = mem_case  # "cpu" or "cuda": streams.make_stream(f"{mem_case}:{i}")

    def make_stream(self, index: int) -> Any:
        from actorflow.streams.stream import make_stream

        return make_stream(f"{self.mem_case}:{index}")

    def __repr__(self) -> str:
        return f"<stream type {self.name}>"


class InstructionType:
    """What an instruction does on its stream (``compute``), bound to a stream type."""

    stream_type = ""
    fusable = False  # element-wise steps may join its instructions (``chain.try_fuse``)
    own_inputs = False  # compute() checks its inputs for poison itself (per step)

    def compute(self, instr: Instruction, ctx: Any) -> None:
        raise NotImplementedError


def _load() -> None:
    from actorflow.eager import instruction_types  # noqa: F401  (registers the built-ins)


STREAM_TYPES: Registry[StreamType] = Registry("stream type", _load)
INSTRUCTION_TYPES: Registry[InstructionType] = Registry("instruction type", _load)


def register_stream_type(st: StreamType) -> StreamType:
    return STREAM_TYPES.register(st.name, st)


def register_instruction_type(name: str, it: InstructionType) -> InstructionType:
    """Bind ``name`` to ``it`` and its stream type (which must be registered already)."""
    STREAM_TYPES.get(it.stream_type)
    return INSTRUCTION_TYPES.register(name, it)


_ids = itertools.count(1)


class Instruction:
    """One unit of work for the VM; ``done`` flips once its stream finished it."""

    __slots__ = ("deps", "dispatched", "done", "error", "fusable", "id", "itype", "name",
                 "operand", "reads", "started", "stream", "waited", "where", "writes")

    def __init__(self, itype: InstructionType, stream: StreamRt, name: str, operand: Any,
                 reads: list[BlobObject], writes: list[BlobObject],
                 where: Any) -> None:
        self.id = next(_ids)
        self.itype = itype
        self.stream = stream
        self.name = name  # op name (or "copy", "release") for errors and traces
        self.operand = operand
        self.reads: Sequence[BlobObject] = reads  # (a tuple once done)
        self.writes: Sequence[BlobObject] = writes
        self.where = where  # the user's (file, line) that issued it
        # unfinished instructions of other streams; a shared empty tuple until there are any
        self.deps: Sequence[Instruction] = ()
        self.dispatched = False
        self.started = False  # a stream took it from its FIFO (nothing joins it after that)
        self.fusable = itype.fusable
        self.waited = False  # a thread waits for it (the VM's cv is notified when done)
        self.done = False
        self.error: Exception | None = None

    def describe(self) -> str:
        at = f" at {self.where[0]}:{self.where[1]}" if self.where else ""
        return f"instruction {self.id} '{self.name}' on {self.stream.label}{at}"

    def __repr__(self) -> str:
        return f"<{self.describe()}{' done' if self.done else ''}>"
