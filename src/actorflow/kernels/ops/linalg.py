"""matmul, bias_add, softmax."""

from __future__ import annotations

from typing import Any

from actorflow.errors import OpError
from actorflow.kernels.blob import BlobDesc
from actorflow.kernels.dtype import floating
from actorflow.kernels.grad import register_grad
from actorflow.kernels.ops._infer import norm_axis, result_dtype, work_dtype
from actorflow.kernels.ops.batched import matmul_grads
from actorflow.kernels.registry import Arrays, Attrs, Blobs, KernelContext, OpDef, register_op


def _matmul_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    a, b = ins["a"].shape, ins["b"].shape
    if len(a) != 2 or len(b) != 2:
        raise OpError(f"matmul takes 2-D inputs, got shapes {a} and {b}")
    ta, tb = bool(attrs.get("transpose_a", False)), bool(attrs.get("transpose_b", False))
    m, k1 = (a[1], a[0]) if ta else a
    k2, n = (b[1], b[0]) if tb else b
    if k1 != k2:
        raise OpError(f"inner dimensions differ: a {a} and b {b} (k {k1} != {k2})")
    return {"out": BlobDesc((m, n), result_dtype(ins["a"].dtype, ins["b"].dtype))}


def _matmul_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    a, b = ins["a"], ins["b"]
    if attrs.get("transpose_a"):
        a = a.T
    if attrs.get("transpose_b"):
        b = b.T
    ctx.xp.matmul(a, b, out=outs["out"])


def _bias_add_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    x, b = ins["a"], ins["b"]
    axis = norm_axis(int(attrs.get("axis", -1)), len(x.shape))
    if len(b.shape) != 1 or b.shape[0] != x.shape[axis]:
        raise OpError(f"bias of shape {b.shape} does not fit axis {axis} of input {x.shape}")
    return {"out": BlobDesc(x.shape, result_dtype(x.dtype, b.dtype))}


def _bias_add_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    x, b = ins["a"], ins["b"]
    axis = int(attrs.get("axis", -1)) % x.ndim
    shape = [1] * x.ndim
    shape[axis] = b.shape[0]
    out = outs["out"]  # both converted into the result dtype first (as add)
    ctx.xp.add(x, b.reshape(shape), out=out, dtype=out.dtype, casting="unsafe")


def _softmax_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    d = ins["in"]
    norm_axis(int(attrs.get("axis", -1)), len(d.shape))
    dtype = floating(d.dtype)
    return {"out": BlobDesc(d.shape, dtype)}


def _softmax_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    """exp(x - max) / sum: the max is subtracted first, so [1000, 0] gives [1, 0], not NaN;
    integers and float16 are computed in a float wide enough (``work_dtype``)."""
    xp, x, out = ctx.xp, ins["in"], outs["out"]
    if not out.size:
        return  # nothing to normalise (an empty axis has no max)
    axis = int(attrs.get("axis", -1))
    work = work_dtype(out.dtype)
    if x.dtype != work:
        x = x.astype(work)  # int8: 127 - (-128) must not wrap
    if work == out.dtype:
        xp.subtract(x, x.max(axis=axis, keepdims=True), out=out)
        xp.exp(out, out=out)
        out /= out.sum(axis=axis, keepdims=True)
    else:
        e = xp.exp(x - x.max(axis=axis, keepdims=True))
        e /= e.sum(axis=axis, keepdims=True)
        out[...] = e


register_op(OpDef("matmul", ("a", "b"), _matmul_infer, _matmul_kernel))
register_op(OpDef("bias_add", ("a", "b"), _bias_add_infer, _bias_add_kernel))
register_op(OpDef("softmax", ("in",), _softmax_infer, _softmax_kernel))


# -- gradient rules (kernels/grad.py) ---------------------------------------------------------
def _softmax_grad(F: Any, ctx: Any, dy: Any) -> dict[str, Any]:
    y, axis = ctx.out, int(ctx.attrs.get("axis", -1))
    return {"in": F.mul(y, F.sub(dy, F.sum(F.mul(dy, y), [axis], True)))}


def _bias_add_grad(F: Any, ctx: Any, dy: Any) -> dict[str, Any]:
    axis = int(ctx.attrs.get("axis", -1)) % dy.ndim
    out = {}
    if "a" in ctx.needs:
        out["a"] = dy
    if "b" in ctx.needs:
        out["b"] = F.sum(dy, [i for i in range(dy.ndim) if i != axis], False)
    return out


register_grad("matmul", lambda F, ctx, dy: matmul_grads(
    F, ctx, dy, lambda x, y, ta, tb: F.matmul(x, y, transpose_a=ta, transpose_b=tb)))
register_grad("softmax", _softmax_grad)
register_grad("bias_add", _bias_add_grad)
