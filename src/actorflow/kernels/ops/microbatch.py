"""Micro-batches inside a job: cut one request's batch into ``num`` pieces and put the
pieces' results back together.

``microbatch_slice`` runs after a ``repeat`` task (1 piece -> ``num`` pieces) and keeps
rows ``[i*n/num, (i+1)*n/num)`` of its input for piece ``i`` (``piece_id % num``);
``microbatch_place`` writes its piece into row ``piece_id % num`` of zeros of shape
``(num, *input)``, so the ``acc`` task after it (``num`` pieces -> 1, a sum) stacks the
pieces' results.
"""

from __future__ import annotations

from typing import Any

from actorflow.errors import OpError
from actorflow.kernels.blob import BlobDesc
from actorflow.kernels.registry import Arrays, Attrs, Blobs, KernelContext, OpDef, register_op
from actorflow.kernels.sbp import register_sbp


def _num(attrs: Attrs) -> int:
    n = int(attrs["num"])
    if n < 1:
        raise OpError(f"attr num must be >= 1, got {n}")
    return n


def _slice_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    d, n = ins["in"], _num(attrs)
    if not d.shape or d.shape[0] % n:
        raise OpError(f"a batch of shape {d.shape} does not cut into {n} equal micro-batches "
                      "along axis 0")
    return {"out": BlobDesc((d.shape[0] // n, *d.shape[1:]), d.dtype)}


def _slice_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    out = outs["out"]
    i = int(ctx.piece_id) % _num(attrs)
    rows = out.shape[0]
    out[...] = ins["in"][i * rows:(i + 1) * rows]


def _place_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    d = ins["in"]
    return {"out": BlobDesc((_num(attrs), *d.shape), d.dtype)}


def _place_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    out = outs["out"]
    out.fill(0)
    out[int(ctx.piece_id) % _num(attrs)] = ins["in"]


register_op(OpDef("microbatch_slice", ("in",), _slice_infer, _slice_kernel,
                  doc="rows of micro-batch piece_id % num of the input (after a repeat)"))
register_op(OpDef("microbatch_place", ("in",), _place_infer, _place_kernel,
                  doc="zeros of (num, *input) with the input at row piece_id % num (then acc)"))


def _slice_sbp(ins: Any, out: Any, attrs: Attrs) -> list:
    return [({"in": f"S{i}"}, f"S{i}") for i in range(1, len(out))]


def _place_sbp(ins: Any, out: Any, attrs: Attrs) -> list:
    return [({"in": f"S{i}"}, f"S{i + 1}") for i in range(len(out) - 1)] + [({"in": "P"}, "P")]


register_sbp("microbatch_slice", _slice_sbp)
register_sbp("microbatch_place", _place_sbp)
