"""max/min reductions and argmax/argmin, with gradients for the reductions (shared evenly
among the elements that reach the extreme, as ``amax``)."""

from __future__ import annotations

from typing import Any

from actorflow.errors import OpError
from actorflow.kernels.blob import BlobDesc
from actorflow.kernels.grad import register_grad
from actorflow.kernels.ops._infer import norm_axis
from actorflow.kernels.ops.shape import _axis_arg, _reduce_infer
from actorflow.kernels.registry import Arrays, Attrs, Blobs, KernelContext, OpDef, register_op
from actorflow.kernels.sbp import reduce_rule, register_sbp


def _extreme(fn: str) -> Any:
    def kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
        getattr(ctx.xp, fn)(ins["in"], axis=_axis_arg(attrs, ins["in"].ndim),
                            keepdims=bool(attrs.get("keepdims", False)), out=outs["out"])
    return kernel


def _nonempty(d: BlobDesc, attrs: Attrs, what: str) -> None:
    """A max, min or arg of nothing is undefined: refused (as torch), not left to numpy."""
    axis = attrs.get("axis")
    if axis is None and 0 in d.shape:
        raise OpError(f"{what} of an empty tensor {d.shape} is undefined: it has no identity")
    axes = [] if axis is None else [axis] if isinstance(axis, int) else axis
    for a in axes:
        if d.shape and d.shape[norm_axis(int(a), len(d.shape))] == 0:
            raise OpError(f"{what} of an empty axis ({norm_axis(int(a), len(d.shape))} of "
                          f"shape {d.shape}) is undefined: it has no identity")


def _extreme_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    """The reduced shape (as sums); the input's dtype (a max of int8 is int8, not int64)."""
    _nonempty(ins["in"], attrs, "max/min")
    out = _reduce_infer(ins, attrs)["out"]
    return {"out": BlobDesc(out.shape, ins["in"].dtype)}


def _arg_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    d = ins["in"]
    axis = attrs.get("axis")
    keep = bool(attrs.get("keepdims", False))
    _nonempty(d, attrs, "argmax/argmin")
    if axis is None:
        shape: tuple[int, ...] = tuple(1 for _ in d.shape) if keep else ()
    else:
        ax = norm_axis(int(axis), len(d.shape))
        shape = tuple(1 if i == ax else s for i, s in enumerate(d.shape)) if keep else tuple(
            s for i, s in enumerate(d.shape) if i != ax)
    return {"out": BlobDesc(shape, "int64")}


def _arg(fn: str) -> Any:
    def kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
        axis = attrs.get("axis")
        axis = None if axis is None or not ins["in"].ndim else int(axis)
        r = getattr(ctx.xp, fn)(ins["in"], axis=axis)
        outs["out"][...] = r.reshape(outs["out"].shape)
    return kernel


register_op(OpDef("reduce_max", ("in",), _extreme_infer, _extreme("amax")))
register_op(OpDef("reduce_min", ("in",), _extreme_infer, _extreme("amin")))
register_op(OpDef("argmax", ("in",), _arg_infer, _arg("argmax"),
                  doc="index of the largest element along attr axis (None: flattened)"))
register_op(OpDef("argmin", ("in",), _arg_infer, _arg("argmin")))
register_sbp(["reduce_max", "reduce_min"], reduce_rule(partial=False))


def _arg_sbp(ins: Any, out: Any, attrs: Attrs) -> list:
    axis = attrs.get("axis")
    if axis is None:
        return []
    return reduce_rule(partial=False)(ins, out, {"axis": axis, "keepdims": attrs.get("keepdims")})


register_sbp(["argmax", "argmin"], _arg_sbp)


def reduced_axes(ndim: int, attrs: Attrs) -> list[int]:
    axis = attrs.get("axis")
    axes = range(ndim) if axis is None else [axis] if isinstance(axis, int) else axis
    return sorted({int(a) % max(ndim, 1) for a in axes})


def kept_shape(shape: tuple[int, ...], attrs: Attrs) -> list[int]:
    """``shape`` with the reduced axes of ``attrs`` kept as 1 (keepdims=True's shape)."""
    red = reduced_axes(len(shape), attrs)
    return [1 if i in red else s for i, s in enumerate(shape)]


def _extreme_grad(F: Any, ctx: Any, dy: Any) -> dict[str, Any]:
    x = ctx.inputs["in"]
    keep = kept_shape(tuple(x.shape), ctx.attrs)
    y = F.reshape(ctx.out, keep)
    mask = F.cast(F.eq(x, y), x.dtype)
    red = reduced_axes(len(x.shape), ctx.attrs)
    count = F.sum(mask, red, True) if red else mask
    share = F.div(F.reshape(dy, keep), count)
    return {"in": F.mul(mask, share)}


register_grad(["reduce_max", "reduce_min"], _extreme_grad)
