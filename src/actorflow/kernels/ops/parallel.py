"""Ops the compiler emits for parallel plans: multi-axis slices, variable parts, constants.

``box_slice`` cuts one region out of a piece (boxing); ``variable_part`` is the part of a
variable one device holds (its value lives in ``ctx.state`` across pieces, like
``variable``); ``const_array`` is a small array written into the plan (numpy arguments of
functional ops).
"""

from __future__ import annotations

import numpy as np

from actorflow.errors import OpError
from actorflow.kernels.blob import BlobDesc
from actorflow.kernels.ops.generators import initial_variable_value
from actorflow.kernels.registry import Arrays, Attrs, Blobs, KernelContext, OpDef, register_op


def _region(shape: tuple[int, ...], attrs: Attrs) -> tuple[list[int], list[int]]:
    begin, end = [int(x) for x in attrs["begin"]], [int(x) for x in attrs["end"]]
    if len(begin) != len(shape) or len(end) != len(shape):
        raise OpError(f"begin {begin} / end {end} must have one entry per axis of {shape}")
    for ax, (b, e, n) in enumerate(zip(begin, end, shape)):
        if not 0 <= b <= e <= n:
            raise OpError(f"region [{b}:{e}] is out of range for axis {ax} of {shape}")
    return begin, end


def _box_slice_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    d = ins["in"]
    begin, end = _region(d.shape, attrs)
    return {"out": BlobDesc(tuple(e - b for b, e in zip(begin, end)), d.dtype)}


def _box_slice_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    idx = tuple(slice(int(b), int(e)) for b, e in zip(attrs["begin"], attrs["end"]))
    outs["out"][...] = ins["in"][idx]


def _logical(attrs: Attrs) -> dict:
    return {**attrs, "shape": attrs["logical_shape"]}


def _variable_part_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    shape = tuple(int(s) for s in attrs["logical_shape"])
    begin, end = _region(shape, attrs)
    try:
        dtype = np.dtype(attrs.get("dtype", "float32")).name
    except TypeError as e:
        raise OpError(f"unknown dtype {attrs.get('dtype')!r}") from e
    return {"out": BlobDesc(tuple(e - b for b, e in zip(begin, end)), dtype)}


def _variable_part_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    value = ctx.state.get("value")
    if value is None:
        full = initial_variable_value(_logical(attrs))
        idx = tuple(slice(int(b), int(e)) for b, e in zip(attrs["begin"], attrs["end"]))
        value = ctx.state["value"] = ctx.xp.asarray(np.ascontiguousarray(full[idx]))
    outs["out"][...] = value


def _const_array_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    shape = tuple(int(s) for s in attrs["shape"])
    n = 1
    for s in shape:
        n *= s
    if len(attrs["value"]) != n:
        raise OpError(f"value holds {len(attrs['value'])} numbers, shape {shape} needs {n}")
    return {"out": BlobDesc(shape, np.dtype(attrs["dtype"]).name)}


def _const_array_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    out = outs["out"]
    out[...] = ctx.xp.asarray(np.asarray(attrs["value"], dtype=out.dtype).reshape(out.shape))


register_op(OpDef("box_slice", ("in",), _box_slice_infer, _box_slice_kernel,
                  doc="one region of a piece: attrs begin/end per axis (boxing)"))
register_op(OpDef("variable_part", (), _variable_part_infer, _variable_part_kernel,
                  doc="the region begin/end of a variable of logical_shape, kept across pieces"))
register_op(OpDef("const_array", (), _const_array_infer, _const_array_kernel,
                  doc="a constant array stored in attrs (flat value, shape, dtype)"))
