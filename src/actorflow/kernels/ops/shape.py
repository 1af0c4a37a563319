"""Layout ops: reshape, transpose, cast, concat, slice, reductions."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorflow.errors import OpError
from actorflow.kernels.blob import BlobDesc
from actorflow.kernels.grad import register_grad
from actorflow.kernels.ops._infer import norm_axis, result_dtype, work_dtype
from actorflow.kernels.registry import (
    Arrays,
    Attrs,
    Blobs,
    KernelContext,
    KernelFn,
    OpDef,
    register_op,
)


def _reshape_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    d = ins["in"]
    shape = [int(x) for x in attrs["shape"]]
    total = math.prod(d.shape)
    if shape.count(-1) > 1:
        raise OpError(f"shape {shape} has more than one -1: only one dimension can be inferred")
    bad = [x for x in shape if x < -1]
    if bad:
        raise OpError(f"shape {shape}: Invalid shape dimension {bad[0]}")
    if -1 in shape:
        rest = math.prod(x for x in shape if x != -1)
        if rest == 0 or total % rest:
            raise OpError(f"cannot reshape {d.shape} into {tuple(shape)}")
        shape[shape.index(-1)] = total // rest
    if math.prod(shape) != total:
        raise OpError(f"cannot reshape {d.shape} ({total} elements) into {tuple(shape)}: "
                      f"shape '({','.join(map(str, shape))})' is invalid for input of size "
                      f"{total}")
    return {"out": BlobDesc(tuple(shape), d.dtype)}


def _reshape_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    out = outs["out"]
    out[...] = ins["in"].reshape(out.shape)


def _transpose_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    d = ins["in"]
    perm = attrs.get("perm")
    perm = list(range(len(d.shape)))[::-1] if perm is None else [int(p) for p in perm]
    if sorted(perm) != list(range(len(d.shape))):
        raise OpError(f"perm {perm} is not a permutation of the {len(d.shape)} axes of {d.shape}")
    return {"out": BlobDesc(tuple(d.shape[p] for p in perm), d.dtype)}


def _transpose_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    x = ins["in"]
    perm = attrs.get("perm")
    outs["out"][...] = x.transpose(perm if perm is None else tuple(perm))


def _cast_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    try:
        dtype = np.dtype(attrs["dtype"]).name
    except TypeError as e:
        raise OpError(f"unknown dtype {attrs['dtype']!r}") from e
    return {"out": BlobDesc(ins["in"].shape, dtype)}


def _cast_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    outs["out"][...] = ins["in"].astype(outs["out"].dtype, copy=False)


def _concat_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    names = sorted(ins, key=lambda k: int(k[3:]))
    descs = [ins[k] for k in names]
    ndim = len(descs[0].shape)
    axis = norm_axis(int(attrs.get("axis", 0)), ndim)
    for d in descs[1:]:
        if len(d.shape) != ndim or any(
            a != b for i, (a, b) in enumerate(zip(d.shape, descs[0].shape)) if i != axis
        ):
            raise OpError(
                f"inputs must agree on all axes but {axis}: {[x.shape for x in descs]}"
            )
    shape = list(descs[0].shape)
    shape[axis] = sum(d.shape[axis] for d in descs)
    return {"out": BlobDesc(tuple(shape), result_dtype(*[d.dtype for d in descs]))}


def _concat_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    names = sorted(ins, key=lambda k: int(k[3:]))
    ctx.xp.concatenate([ins[k] for k in names], axis=int(attrs.get("axis", 0)), out=outs["out"])


def _slice_bounds(shape: tuple[int, ...], attrs: Attrs) -> tuple[int, int, int]:
    axis = norm_axis(int(attrs.get("axis", 0)), len(shape))
    start, stop = int(attrs["start"]), int(attrs["stop"])
    if not 0 <= start <= stop <= shape[axis]:
        raise OpError(f"slice [{start}:{stop}] is out of range for axis {axis} of {shape}")
    return axis, start, stop


def _slice_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    d = ins["in"]
    axis, start, stop = _slice_bounds(d.shape, attrs)
    shape = list(d.shape)
    shape[axis] = stop - start
    return {"out": BlobDesc(tuple(shape), d.dtype)}


def _slice_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    x = ins["in"]
    axis, start, stop = _slice_bounds(x.shape, attrs)
    idx = [slice(None)] * x.ndim
    idx[axis] = slice(start, stop)
    outs["out"][...] = x[tuple(idx)]


def _reduce_infer(ins: Blobs, attrs: Attrs, mean: bool = False) -> dict[str, BlobDesc]:
    d = ins["in"]
    axis = attrs.get("axis")
    keepdims = bool(attrs.get("keepdims", False))
    axes = list(range(len(d.shape))) if axis is None else (
        [axis] if isinstance(axis, int) else list(axis))
    axes = sorted({norm_axis(int(a), len(d.shape)) for a in axes})
    shape = [1 if i in axes else s for i, s in enumerate(d.shape)] if keepdims else [
        s for i, s in enumerate(d.shape) if i not in axes]
    dtype = d.dtype
    if np.dtype(dtype).kind in "iub":
        if mean:  # OneFlow: "Can only calculate the mean of floating types."
            raise OpError(f"Can only calculate the mean of floating types, not {dtype}")
        dtype = "int64"  # sums of integers and bools are int64 (OneFlow, torch)
    return {"out": BlobDesc(tuple(shape), dtype)}


def _axis_arg(attrs: Attrs, ndim: int = 1) -> int | tuple[int, ...] | None:
    """The axes for numpy; a 0-d tensor's axis 0 / -1 (which inference accepts, as
    PyTorch does) is the whole of it."""
    axis = attrs.get("axis")
    if ndim == 0:
        return None
    return tuple(axis) if isinstance(axis, (list, tuple)) else axis


def _reduce(fn: str) -> KernelFn:
    """sum / mean; a float16 result is summed in float32 (as a GPU's half reduction does:
    8430 + 57100 overflows float16 before the mean brings it back)."""
    def kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
        x, out = ins["in"], outs["out"]
        axis, keep = _axis_arg(attrs, x.ndim), bool(attrs.get("keepdims", False))
        if out.dtype.kind == "f" and work_dtype(out.dtype) != out.dtype:
            out[...] = getattr(ctx.xp, fn)(x, axis=axis, keepdims=keep,
                                           dtype=work_dtype(out.dtype))
        else:
            getattr(ctx.xp, fn)(x, axis=axis, keepdims=keep, out=out)
    return kernel


_reduce_sum_kernel, _reduce_mean_kernel = _reduce("sum"), _reduce("mean")


register_op(OpDef("reshape", ("in",), _reshape_infer, _reshape_kernel))
register_op(OpDef("transpose", ("in",), _transpose_infer, _transpose_kernel))
register_op(OpDef("cast", ("in",), _cast_infer, _cast_kernel))
register_op(OpDef("concat", (), _concat_infer, _concat_kernel, variadic=True))
register_op(OpDef("slice", ("in",), _slice_infer, _slice_kernel))
register_op(OpDef("reduce_sum", ("in",), _reduce_infer, _reduce_sum_kernel))
register_op(OpDef("reduce_mean", ("in",), lambda i, a: _reduce_infer(i, a, mean=True),
                  _reduce_mean_kernel))


# -- gradient rules (kernels/grad.py) ---------------------------------------------------------
def _reduce_grad(mean: bool) -> Any:
    def rule(F: Any, ctx: Any, dy: Any) -> dict[str, Any]:
        x = ctx.inputs["in"]
        shape = tuple(x.shape)
        axis = ctx.attrs.get("axis")
        axes = range(len(shape)) if axis is None else [axis] if isinstance(axis, int) else axis
        red = sorted({int(a) % max(len(shape), 1) for a in axes})
        keep = [1 if i in red else s for i, s in enumerate(shape)]
        g = F.broadcast_to(F.reshape(dy, keep), list(shape)) if shape else F.reshape(dy, [])
        if mean:
            n = math.prod(shape[i] for i in red)
            g = F.mul(g, 1.0 / max(n, 1))
        return {"in": g}
    return rule


def _concat_grad(F: Any, ctx: Any, dy: Any) -> dict[str, Any]:
    names = sorted(ctx.inputs, key=lambda k: int(k[3:]))
    axis = int(ctx.attrs.get("axis", 0)) % dy.ndim
    out, start = {}, 0
    for k in names:
        n = ctx.inputs[k].shape[axis]
        if k in ctx.needs:
            out[k] = F.narrow(dy, axis, start, n)
        start += n
    return out


def _slice_grad(F: Any, ctx: Any, dy: Any) -> dict[str, Any]:
    shape = list(ctx.inputs["in"].shape)
    axis = int(ctx.attrs.get("axis", 0)) % len(shape)
    begin, end = [0] * len(shape), list(shape)
    begin[axis], end[axis] = int(ctx.attrs["start"]), int(ctx.attrs["stop"])
    return {"in": F.strided_slice_grad(dy, shape, begin, end, [1] * len(shape))}


def _inverse(perm: list[int]) -> list[int]:
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return inv


def _transpose_grad(F: Any, ctx: Any, dy: Any) -> dict[str, Any]:
    perm = ctx.attrs.get("perm")
    n = dy.ndim
    perm = list(range(n))[::-1] if perm is None else [int(p) for p in perm]
    return {"in": F.transpose(dy, _inverse(perm))}


register_grad("reshape", lambda F, ctx, dy: {"in": F.reshape(dy, list(ctx.inputs["in"].shape))})
register_grad("transpose", _transpose_grad)
register_grad("cast", lambda F, ctx, dy: {"in": F.cast(dy, ctx.inputs["in"].dtype)})
register_grad("concat", _concat_grad)
register_grad("slice", _slice_grad)
register_grad("reduce_sum", _reduce_grad(mean=False))
register_grad("reduce_mean", _reduce_grad(mean=True))
