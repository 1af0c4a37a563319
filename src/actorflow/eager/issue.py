"""The issue of one op: a cached plan, then blobs, a step and an instruction (or a fused one).

An ``IssuePlan`` holds what the op type, the inputs' metas (shape, dtype, device) and the
attrs decide: the output metas (inferred once with the op definition the compiler uses),
the kernel, the instruction type and the stream.  ``run`` is the per-call part: output
blobs, the step, the VM's ``submit_step`` (which fuses or makes an instruction), and the
output tensors.  The interpreter caches plans by (op, metas, attrs); the frontend's fast
path caches them by the call's argument types and metas, so a repeated call goes straight
to ``run``.  This module is the Python reference: the compiled core's ``Plan`` does the
same in one C call.
"""

from __future__ import annotations

from typing import Any

from actorflow.eager.blob import BlobObject
from actorflow.eager.chain import Step
from actorflow.eager.instruction import Instruction
from actorflow.eager.tensor import caller_where

NAME = "python"
Blob = BlobObject  # the core's records, by the names the VM asks for (vm.core.Blob, ...)


class IssuePlan:
    __slots__ = ("attrs", "expr", "in_names", "itype", "kernel", "outs", "stream", "ufunc",
                 "vm", "wrap")

    def __init__(self, vm: Any, expr: Any, in_names: tuple[str, ...], attrs: dict[str, Any],
                 outs: tuple, itype: Any, stream: Any, wrap: Any, ufunc: Any = None) -> None:
        self.vm = vm
        self.expr = expr
        self.in_names = in_names  # the op definition's input order
        self.attrs = attrs
        self.outs = outs  # ((name, Meta), ...)
        self.kernel = expr.opdef.kernel
        self.ufunc = ufunc  # (function, form, needs casting="unsafe") or None
        self.itype = itype
        self.stream = stream
        self.wrap = wrap  # tensor class's _from_blob

    def run(self, tensors: Any, attrs: dict[str, Any] | None = None, where: Any = None) -> Any:
        """Issue the op on ``tensors`` (in ``in_names`` order); ``attrs`` replaces the
        plan's (the same but for values inference reads by type only)."""
        vm = self.vm
        ins: dict[str, BlobObject] = {}
        reads: list[BlobObject] = []
        for name, t in zip(self.in_names, tensors):
            b = t._blob
            ins[name] = b
            reads.append(b)
        outs: dict[str, BlobObject] = {}
        writes: list[BlobObject] = []
        for name, m in self.outs:
            outs[name] = b = BlobObject(m.shape, m.dtype, m.device, None, m.nbytes, m)
            writes.append(b)
        if attrs is None:
            attrs = self.attrs
        step = Step(self.expr.op_type, where if where is not None else caller_where(3),
                    self.kernel, self.ufunc, ins, outs, attrs, reads, writes)
        vm.submit_step(self.itype, self.stream, step)
        wrap = self.wrap
        if len(writes) == 1:
            return wrap(writes[0], vm)
        return tuple(wrap(b, vm) for b in writes)


__all__ = ["NAME", "Blob", "Instruction", "IssuePlan", "Step"]
