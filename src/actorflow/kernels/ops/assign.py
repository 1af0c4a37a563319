"""``assign``: change a variable in place, inside a job.

``assign(ref, value)`` runs on each device part of a variable: it copies ``value`` (already
boxed to the variable's layout) into the part's state and outputs the new value.  The part's
state is shared with every ``variable_part`` node of that part on the machine (the runtime
hands both the same ``ctx.state`` by attr ``state_key``), so every job naming the variable
reads and writes one copy per device.  ``ref`` (the value read this piece) orders the write
after the read inside the piece; the main job's lock orders pieces and jobs.
"""

from __future__ import annotations

from actorflow.errors import OpError
from actorflow.kernels.blob import BlobDesc
from actorflow.kernels.ops.parallel import _variable_part_kernel
from actorflow.kernels.registry import Arrays, Attrs, Blobs, KernelContext, OpDef, register_op


def _assign_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    ref, value = ins["ref"], ins["value"]
    if tuple(ref.shape) != tuple(value.shape):
        raise OpError(f"value has shape {tuple(value.shape)}, the variable part "
                      f"{tuple(ref.shape)}")
    return {"out": BlobDesc(tuple(ref.shape), ref.dtype)}


def _assign_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    value = ctx.state.get("value")
    if value is None:  # nobody read the part yet on this machine: make its first value
        _variable_part_kernel(ctx, {}, {"out": outs["out"]}, attrs["variable"])
        value = ctx.state["value"]
    value[...] = ins["value"]
    outs["out"][...] = value


register_op(OpDef("assign", ("ref", "value"), _assign_infer, _assign_kernel,
                  doc="write value into a variable part (attrs variable: its part's attrs)"))
