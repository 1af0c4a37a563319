"""Comparisons, logical ops, ``where``, ``masked_fill`` and ``sign``.

Comparisons and logical ops give bool tensors (no gradient flows through them); ``where``
and ``masked_fill`` route the gradient to the branch each element came from.
"""

from __future__ import annotations

from typing import Any

from actorflow.errors import OpError
from actorflow.kernels import dtype as dt
from actorflow.kernels.blob import BlobDesc
from actorflow.kernels.grad import register_grad, sum_to
from actorflow.kernels.ops._infer import broadcast_shape, result_dtype, same, scalar_as
from actorflow.kernels.registry import (
    Arrays,
    Attrs,
    Blobs,
    KernelContext,
    KernelFn,
    OpDef,
    register_op,
)
from actorflow.kernels.sbp import elementwise_rule, register_sbp, unary_rule

COMPARE = {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal",
           "gt": "greater", "ge": "greater_equal", "logical_and": "logical_and",
           "logical_or": "logical_or", "logical_xor": "logical_xor"}


def _cmp_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    return {"out": BlobDesc(broadcast_shape(ins["a"].shape, ins["b"].shape), "bool")}


def _in(x: Any, dtype: str) -> Any:
    return x if x.dtype == dtype else x.astype(dtype)


def _cmp_kernel(fn: str) -> KernelFn:
    """Compared in OneFlow's promoted dtype (an int64 beside a float32 tensor compares as
    float32), not numpy's wider one, so a GPU kernel gives the same bools."""
    def kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
        a, b = ins["a"], ins["b"]
        d = dt.binary(str(a.dtype), a.ndim, str(b.dtype), b.ndim)
        getattr(ctx.xp, fn)(_in(a, d), _in(b, d), out=outs["out"])
    return kernel


def _scalar_cmp_kernel(fn: str) -> KernelFn:
    """The number is converted into the promoted dtype first (``float32 <= -1e-50`` is
    ``x <= -0.0``; ``int8 < 300`` compares with 44), as OneFlow does."""
    def kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
        x, s = ins["in"], attrs["scalar"]
        d = dt.with_scalar(str(x.dtype), dt.scalar_category(s))
        getattr(ctx.xp, fn)(_in(x, d), scalar_as(s, d), out=outs["out"])
    return kernel


def _scalar_cmp_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    if not isinstance(attrs["scalar"], (int, float, bool)):
        raise OpError(f"attr 'scalar' must be a number, got {type(attrs['scalar']).__name__}")
    return {"out": BlobDesc(ins["in"].shape, "bool")}


for _t, _fn in COMPARE.items():
    register_op(OpDef(_t, ("a", "b"), _cmp_infer, _cmp_kernel(_fn), doc=f"{_fn}(a, b) as bool"))
    register_op(OpDef(f"scalar_{_t}", ("in",), _scalar_cmp_infer, _scalar_cmp_kernel(_fn),
                      doc=f"{_fn}(x, scalar) as bool"))
register_sbp(list(COMPARE), elementwise_rule([]))
register_sbp([f"scalar_{t}" for t in COMPARE], unary_rule(linear=False))


def _logical_not(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    ctx.xp.logical_not(ins["in"], out=outs["out"])


def _sign(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    x = ins["in"]
    if x.dtype == bool:  # sign of a bool is the bool (torch); numpy has no bool loop
        outs["out"][...] = x
    else:
        ctx.xp.sign(x, out=outs["out"])


register_op(OpDef("logical_not", ("in",),
                  lambda ins, a: {"out": BlobDesc(ins["in"].shape, "bool")}, _logical_not))
register_op(OpDef("sign", ("in",), lambda ins, a: same(ins["in"]), _sign, doc="-1, 0 or 1"))
register_sbp(["logical_not", "sign"], unary_rule(linear=False))
register_grad("sign", lambda F, ctx, dy: {"in": F.mul(dy, 0.0)})


# -- where ----------------------------------------------------------------------------------
def _where_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    shape = ins["cond"].shape
    dtypes = []
    for k in ("x", "y"):
        if k in ins:
            shape = broadcast_shape(shape, ins[k].shape)
            dtypes.append(ins[k].dtype)
    return {"out": BlobDesc(shape, result_dtype(*dtypes))}


def _in_dtype(ctx: KernelContext, v: Any, dtype: Any) -> Any:
    """An operand (tensor or attr number) taken in the result's dtype first, so an int64
    beside a float number is not rounded through float64 on its way."""
    if isinstance(v, (bool, int, float)):
        return ctx.xp.asarray(v).astype(dtype)
    return v if v.dtype == dtype else v.astype(dtype)


def _where_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    out = outs["out"]
    x = _in_dtype(ctx, ins["x"] if "x" in ins else attrs["x"], out.dtype)
    y = _in_dtype(ctx, ins["y"] if "y" in ins else attrs["y"], out.dtype)
    out[...] = ctx.xp.where(ins["cond"], x, y)


register_op(OpDef("where", ("cond", "x", "y"), _where_infer, _where_kernel,
                  doc="x where cond else y"))
register_op(OpDef("where_scalar_y", ("cond", "x"), _where_infer, _where_kernel,
                  doc="x where cond else attr y"))
register_op(OpDef("where_scalar_x", ("cond", "y"), _where_infer, _where_kernel,
                  doc="attr x where cond else y"))
register_sbp(["where", "where_scalar_x", "where_scalar_y"], elementwise_rule([]))


def _where_grad(F: Any, ctx: Any, dy: Any) -> dict[str, Any]:
    cond, out = ctx.inputs["cond"], {}
    if "x" in ctx.needs:
        out["x"] = sum_to(F, F.where(cond, dy, 0.0), ctx.inputs["x"].shape)
    if "y" in ctx.needs:
        out["y"] = sum_to(F, F.where(cond, 0.0, dy), ctx.inputs["y"].shape)
    return out


register_grad(["where", "where_scalar_x", "where_scalar_y"], _where_grad)


# -- masked_fill ------------------------------------------------------------------------------
def _masked_fill_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    x, m = ins["in"], ins["mask"]
    if broadcast_shape(x.shape, m.shape) != x.shape:
        raise OpError(f"mask of shape {m.shape} does not broadcast to the input {x.shape}")
    if not isinstance(attrs.get("value"), (int, float, bool)):
        raise OpError(f"attr 'value' must be a number, got {attrs.get('value')!r}")
    return same(x)


def _masked_fill_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    out = outs["out"]
    out[...] = ctx.xp.where(ins["mask"], _in_dtype(ctx, attrs["value"], out.dtype),
                            _in_dtype(ctx, ins["in"], out.dtype))


register_op(OpDef("masked_fill", ("in", "mask"), _masked_fill_infer, _masked_fill_kernel,
                  doc="value where mask else the input (mask broadcasts)"))


def _masked_fill_sbp(ins: Any, out: Any, attrs: Attrs) -> list:
    return [({"in": f"S{i}", "mask": _mask_code(ins["mask"], out, i)}, f"S{i}")
            for i in range(len(out))]


def _mask_code(shape: tuple[int, ...], out: tuple[int, ...], axis: int) -> str:
    i = axis - (len(out) - len(shape))
    return f"S{i}" if i >= 0 and shape[i] == out[axis] else "B"


register_sbp("masked_fill", _masked_fill_sbp)
register_grad("masked_fill", lambda F, ctx, dy: {
    "in": F.masked_fill(dy, ctx.inputs["mask"], 0.0)})
