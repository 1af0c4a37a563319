"""The communication stream: collectives of global tensors as VM instructions.

    stream type  device  instruction type
    cpu.comm     cpu     cpu.comm (run a host function of input arrays -> output array)

A comm instruction reads and writes blobs like a kernel, so the scheduler orders it after
the kernels that produce its inputs and before the ones that read its output; being on one
stream, the collectives of a process run in the order they were issued, which is the order
every rank issues them in (SPMD), so their messages pair up.  The function (``rebox``, a
consistency check) is given by the global interpreter; this module knows no collective.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from actorflow.eager.blob import BlobObject
from actorflow.eager.device import CPU
from actorflow.eager.instruction import (
    Instruction,
    InstructionType,
    StreamType,
    register_instruction_type,
    register_stream_type,
)

COMM = "cpu.comm"


class CommCall(InstructionType):
    """operand: (fn, [input blobs], output blob or None); fn(*arrays) -> array or None."""

    stream_type = COMM

    def compute(self, instr: Instruction, host: Any) -> None:
        fn, ins, out = instr.operand
        result = fn(*[b.array for b in ins])
        if out is not None:
            out.array = result
            host.allocated += out.nbytes
            host.allocs += 1


register_stream_type(StreamType(COMM, "cpu", "cpu"))
register_instruction_type(COMM, CommCall())


def issue_comm(vm: Any, name: str, fn: Callable[..., Any], ins: list[BlobObject],
               out_shape: tuple[int, ...] | None, dtype: str,
               where: Any) -> tuple[Instruction, BlobObject | None]:
    """Issue ``fn`` on the comm stream reading ``ins``; returns the instruction and the
    blob it writes (None when ``out_shape`` is None: this rank gets no output)."""
    itype, stream = vm.route(COMM, CPU)
    out = None if out_shape is None else vm.core.Blob(out_shape, dtype, CPU)
    instr = vm.core.Instruction(itype, stream, name, (fn, ins, out), list(ins),
                        [] if out is None else [out], where)
    if out is not None:
        out.producer = instr
    vm.submit_one(instr)
    return instr, out


__all__ = ["COMM", "CommCall", "issue_comm"]
