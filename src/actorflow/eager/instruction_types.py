"""The built-in stream types and instruction types, registered by name.

    stream type    device  instruction types bound to it
    cpu.compute    cpu     cpu.compute (run an op kernel), cpu.release
    cuda.compute   cuda    cuda.compute, cuda.release
    cuda.h2d       cuda    cuda.h2d (host blob -> device blob)
    cuda.d2h       cuda    cuda.d2h (device blob -> host blob)

Kernels are the op definitions' kernels (``kernels/registry.py``), the ones actors run:
they take the array module from the stream (``ctx.xp``) and write into outputs this
module allocates on that stream right before the kernel runs.  A release drops the
arrays of blobs whose last tensor died; it runs on the device's compute stream, after
every instruction that reads or writes them (the scheduler orders it).
"""

from __future__ import annotations

from typing import Any

from actorflow.eager.chain import run_steps
from actorflow.eager.instruction import (
    Instruction,
    InstructionType,
    StreamType,
    register_instruction_type,
    register_stream_type,
)


class KernelCall(InstructionType):
    """operand: a list of ``chain.Step`` (one op, or a fused chain of element-wise ops)."""

    fusable = True
    own_inputs = True

    def __init__(self, stream_type: str) -> None:
        self.stream_type = stream_type

    def compute(self, instr: Instruction, host: Any) -> None:
        run_steps(instr, host)


class Copy(InstructionType):
    """operand: (source blob, destination blob); ``convert`` names the stream host's array
    module function that makes the destination array (``asarray``: host -> device,
    ``asnumpy``: device -> host), on the copy stream ``stream_type``."""

    def __init__(self, stream_type: str, convert: str) -> None:
        self.stream_type = stream_type
        self.convert = convert

    def compute(self, instr: Instruction, host: Any) -> None:
        src, dst = instr.operand
        dst.array = getattr(host.xp, self.convert)(src.array)
        host.allocated += dst.nbytes
        host.allocs += 1


class Release(InstructionType):
    """operand: the blobs whose arrays go back (their tensors died)."""

    def __init__(self, stream_type: str) -> None:
        self.stream_type = stream_type

    def compute(self, instr: Instruction, host: Any) -> None:
        for b in instr.operand:
            if b.array is not None:
                b.array = None
                host.freed += b.nbytes
                host.frees += 1


for _st in (StreamType("cpu.compute", "cpu", "cpu"), StreamType("cuda.compute", "cuda", "cuda"),
            StreamType("cuda.h2d", "cuda", "cuda"), StreamType("cuda.d2h", "cuda", "cuda")):
    register_stream_type(_st)

register_instruction_type("cpu.compute", KernelCall("cpu.compute"))
register_instruction_type("cuda.compute", KernelCall("cuda.compute"))
register_instruction_type("cuda.h2d", Copy("cuda.h2d", "asarray"))
register_instruction_type("cuda.d2h", Copy("cuda.d2h", "asnumpy"))
register_instruction_type("cpu.release", Release("cpu.compute"))
register_instruction_type("cuda.release", Release("cuda.compute"))
