"""The instructions builder: turns one eager call into instructions, then hands them over.

Like seed 000's ``PhysicalRun``: a caller appends instructions (a kernel call, a copy
between devices, a release) to a builder, and ``submit`` gives the whole list to the VM
at once, so one call's instructions enter the scheduler together and in order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from actorflow.eager.blob import BlobObject
from actorflow.eager.device import CPU, Device
from actorflow.eager.instruction import Instruction

if TYPE_CHECKING:
    from actorflow.eager.vm import VirtualMachine


class InstructionsBuilder:
    __slots__ = ("instructions", "vm")

    def __init__(self, vm: VirtualMachine) -> None:
        self.vm = vm
        self.instructions: list[Instruction] = []

    def _new(self, itype_name: str, device: Device, name: str, operand: Any,
             reads: list[BlobObject], writes: list[BlobObject],
             where: Any) -> Instruction:
        r = self.vm._routes.get((itype_name, device.index))
        itype, stream = r if r is not None else self.vm.route(itype_name, device)
        instr = self.vm.core.Instruction(itype, stream, name, operand, reads, writes, where)
        self.instructions.append(instr)
        return instr

    def call(self, itype_name: str, device: Device, name: str, operand: Any,
             reads: list[BlobObject], writes: list[BlobObject],
             where: Any = None) -> Instruction:
        """Any registered instruction type: it runs on its stream type's stream of
        ``device``, after the instructions it depends on through ``reads``/``writes``."""
        instr = self._new(itype_name, device, name, operand, reads, writes, where)
        for b in writes:
            b.producer = instr
        return instr

    def copy(self, src: BlobObject, device: Device,
             where: Any) -> BlobObject:
        """A new blob on ``device`` holding ``src``'s values (h2d / d2h instructions)."""
        if src.device is device:
            return src
        if src.device.type != "cpu" and device.type != "cpu":  # device to device: via host
            src = self.copy(src, CPU, where)
        dst = self.vm.core.Blob(src.shape, src.dtype, device)
        if device.type == "cpu":
            kind, on = f"{src.device.type}.d2h", src.device
        else:
            kind, on = f"{device.type}.h2d", device
        instr = self._new(kind, on, f"copy {src.device}->{device}", (src, dst), [src], [dst],
                          where)
        dst.producer = instr
        return dst

    def release(self, blobs: list[BlobObject], device: Device) -> Instruction:
        """Drop the arrays of ``blobs`` after every instruction that uses them."""
        return self._new(f"{device.type}.release", device, "release", blobs, [], blobs, None)

    def submit(self) -> None:
        if self.instructions:
            self.vm.submit(self.instructions)
