"""The ops of a network's layers and losses: log_softmax, cross_entropy (integer targets),
layer_norm, gather (embedding and integer indexing), dropout (seeded), one_hot; with their
fused gradient kernels where a gradient written as several ops would cost more."""

from __future__ import annotations

from typing import Any

import numpy as np

from actorflow.errors import OpError
from actorflow.kernels.blob import BlobDesc
from actorflow.kernels.grad import register_grad
from actorflow.kernels.ops._infer import norm_axis, same, work_dtype
from actorflow.kernels.registry import Arrays, Attrs, Blobs, KernelContext, OpDef, register_op
from actorflow.kernels.sbp import register_sbp


def _floating(d: BlobDesc, what: str) -> None:
    if not d.dtype.startswith("float"):
        raise OpError(f"{what} must be floating point, not {d.dtype}")


# -- log_softmax ----------------------------------------------------------------------------
def _log_softmax_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    d = ins["in"]
    norm_axis(int(attrs.get("axis", -1)), len(d.shape))
    _floating(d, "log_softmax's input")
    return same(d)


def _log_softmax_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    xp, x, out = ctx.xp, ins["in"], outs["out"]
    if not out.size:
        return  # nothing to normalise (an empty axis has no max)
    axis = int(attrs.get("axis", -1))
    work = work_dtype(out.dtype)
    z = x.astype(work) if x.dtype != work else x
    z = z - z.max(axis=axis, keepdims=True)
    out[...] = z - xp.log(xp.exp(z).sum(axis=axis, keepdims=True))


register_op(OpDef("log_softmax", ("in",), _log_softmax_infer, _log_softmax_kernel))


def _axis_splits(axis_attr: str = "axis") -> Any:
    def rule(ins: Any, out: Any, attrs: Attrs) -> list:
        axis = int(attrs.get(axis_attr, -1)) % len(out)
        (k,) = ins
        return [({k: f"S{i}"}, f"S{i}") for i in range(len(out)) if i != axis]
    return rule


register_sbp("log_softmax", _axis_splits())
register_grad("log_softmax", lambda F, ctx, dy: {"in": F.sub(dy, F.mul(
    F.exp(ctx.out), F.sum(dy, [int(ctx.attrs.get("axis", -1))], True)))})


# -- cross_entropy (integer targets, one loss per row) --------------------------------------
def _ce_check(x: BlobDesc, t: BlobDesc) -> None:
    if len(x.shape) != 2:
        raise OpError(f"logits must be 2-D (N, C), got {x.shape}; reshape (..., C) to (-1, C)")
    _floating(x, "logits")
    if t.shape != x.shape[:1] or t.dtype[:3] not in ("int", "uin"):
        raise OpError(f"target must be integers of shape {x.shape[:1]}, got {t.dtype} {t.shape}")


def _ce_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    x, t = ins["logits"], ins["target"]
    _ce_check(x, t)
    return {"out": BlobDesc(t.shape, x.dtype)}


def _row_softmax_parts(xp: Any, x: Any) -> tuple[Any, Any, Any]:
    """softmax(x), each row's max m and log(sum(exp(x - m))), in ``work_dtype`` (float16
    logits: float32).  The loss is taken as (m - x[target]) + log(sum): adding m back
    first and subtracting x[target] after would cancel the digits of a likely class."""
    if x.dtype != work_dtype(x.dtype):
        x = x.astype(work_dtype(x.dtype))
    if not x.size:
        return x, x.sum(axis=1), x.sum(axis=1)
    m = x.max(axis=1, keepdims=True)
    e = xp.exp(x - m)
    s = e.sum(axis=1, keepdims=True)
    return e / s, m[:, 0], xp.log(s)[:, 0]


def _ce_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    xp, x, t = ctx.xp, ins["logits"], ins["target"]
    ignore = int(attrs.get("ignore_index", -100))
    valid = t != ignore
    tt = xp.where(valid, t, 0)
    _, m, log_sum = _row_softmax_parts(xp, x)
    picked = xp.take_along_axis(x, tt.reshape(-1, 1).astype("int64"), axis=1)[:, 0]
    out = outs["out"]
    out[...] = ((m - picked.astype(m.dtype)) + log_sum) * valid


def _ce_grad_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    x, t, dy = ins["logits"], ins["target"], ins["dy"]
    _ce_check(x, t)
    if dy.shape != t.shape or dy.dtype != x.dtype:
        raise OpError(f"dy is {dy.dtype} {dy.shape}, expected the logits' dtype {x.dtype} "
                      f"and shape {t.shape}")
    return same(x)


def _ce_grad_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    xp, x, t, dy = ctx.xp, ins["logits"], ins["target"], ins["dy"]
    ignore = int(attrs.get("ignore_index", -100))
    valid = t != ignore
    p, _, _ = _row_softmax_parts(xp, x)
    hot = xp.arange(x.shape[1]).reshape(1, -1) == xp.where(valid, t, 0).reshape(-1, 1)
    scale = (dy * valid).reshape(-1, 1)
    out = outs["out"]
    out[...] = (p - hot) * scale


register_op(OpDef("cross_entropy", ("logits", "target"), _ce_infer, _ce_kernel,
                  doc="-log softmax(logits)[target] per row (0 where target == ignore_index)"))
register_op(OpDef("cross_entropy_grad", ("dy", "logits", "target"), _ce_grad_infer,
                  _ce_grad_kernel, doc="(softmax(logits) - one_hot(target)) * dy"))
register_sbp("cross_entropy", lambda ins, out, a: [({"logits": "S0", "target": "S0"}, "S0")])
register_sbp("cross_entropy_grad", lambda ins, out, a: [
    ({"dy": "S0", "logits": "S0", "target": "S0"}, "S0")])
register_grad("cross_entropy", lambda F, ctx, dy: {"logits": F.cross_entropy_grad(
    dy, ctx.inputs["logits"], ctx.inputs["target"], int(ctx.attrs.get("ignore_index", -100)))})


# -- layer_norm (normalisation only; the affine part is mul/add) -----------------------------
def _ln_axes(shape: tuple[int, ...], attrs: Attrs) -> tuple[int, ...]:
    k = int(attrs.get("normalized_ndim", 1))
    if not 1 <= k <= len(shape):
        raise OpError(f"normalized_ndim {k} does not fit an input of rank {len(shape)}")
    return tuple(range(len(shape) - k, len(shape)))


def _ln_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    d = ins["in"]
    _ln_axes(d.shape, attrs)
    _floating(d, "layer_norm's input")
    return same(d)


def _ln_stats(xp: Any, x: Any, attrs: Attrs) -> tuple[Any, Any, tuple[int, ...]]:
    """mean and 1/std over the normalized axes, of ``x`` in ``work_dtype`` (float16's
    squares overflow at 256)."""
    axes = _ln_axes(x.shape, attrs)
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    rstd = 1.0 / xp.sqrt(var + float(attrs.get("eps", 1e-5)))
    return mean, rstd, axes


def _ln_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    x = ins["in"]
    x = x.astype(work_dtype(x.dtype)) if x.dtype != work_dtype(x.dtype) else x
    mean, rstd, _ = _ln_stats(ctx.xp, x, attrs)
    out = outs["out"]
    out[...] = (x - mean) * rstd


def _ln_grad_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    x, dy = ins["x"], ins["dy"]
    work = work_dtype(x.dtype)
    x, dy = (x.astype(work), dy.astype(work)) if x.dtype != work else (x, dy)
    mean, rstd, axes = _ln_stats(ctx.xp, x, attrs)
    xhat = (x - mean) * rstd
    out = outs["out"]
    out[...] = rstd * (dy - dy.mean(axis=axes, keepdims=True)
                       - xhat * (dy * xhat).mean(axis=axes, keepdims=True))


def _ln_grad_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    if ins["dy"].shape != ins["x"].shape or ins["dy"].dtype != ins["x"].dtype:
        raise OpError(f"dy ({ins['dy'].dtype} {ins['dy'].shape}) must have x's dtype and "
                      f"shape ({ins['x'].dtype} {ins['x'].shape})")
    return _ln_infer({"in": ins["x"]}, attrs)


register_op(OpDef("layer_norm", ("in",), _ln_infer, _ln_kernel,
                  doc="(x - mean) / sqrt(var + eps) over the last normalized_ndim axes"))
register_op(OpDef("layer_norm_grad", ("dy", "x"), _ln_grad_infer, _ln_grad_kernel))


def _lead_splits(ins: Any, out: Any, attrs: Attrs) -> list:
    k = int(attrs.get("normalized_ndim", 1))
    return [({n: f"S{i}" for n in ins}, f"S{i}") for i in range(len(out) - k)]


register_sbp(["layer_norm", "layer_norm_grad"], _lead_splits)
register_grad("layer_norm", lambda F, ctx, dy: {"in": F.layer_norm_grad(
    dy, ctx.inputs["in"], int(ctx.attrs.get("normalized_ndim", 1)),
    float(ctx.attrs.get("eps", 1e-5)))})


# -- gather (embedding, integer indexing along axis 0) --------------------------------------
def _gather_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    x, idx = ins["in"], ins["index"]
    if not x.shape:
        raise OpError("cannot index a 0-d tensor")
    if idx.dtype[:3] not in ("int", "uin"):
        raise OpError(f"indices must be integers, not {idx.dtype}")
    return {"out": BlobDesc(tuple(idx.shape) + tuple(x.shape[1:]), x.dtype)}


def _gather_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    x, idx = ins["in"], ins["index"]
    n = x.shape[0]
    if idx.size:
        lo, hi = int(idx.min().item()), int(idx.max().item())
        if lo < -n or hi >= n:
            raise IndexError(f"index out of range for a dimension of size {n} (indices "
                             f"{lo}..{hi})")
    outs["out"][...] = ctx.xp.take(x, idx, axis=0)


def _gather_grad_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    dy, idx = ins["dy"], ins["index"]
    rest = tuple(dy.shape[len(idx.shape):])
    if tuple(dy.shape[:len(idx.shape)]) != tuple(idx.shape):
        raise OpError(f"dy {dy.shape} does not start with the index shape {idx.shape}")
    return {"out": BlobDesc((int(attrs["num"]), *rest), dy.dtype)}


def _gather_grad_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    # sum the rows of dy into the rows they were read from: one_hot(index)^T @ dy, a matmul
    # every array module has (scatter-add is not in every one)
    xp, dy, idx, out = ctx.xp, ins["dy"], ins["index"], outs["out"]
    if not idx.size or not out.size:
        out.fill(0)
        return
    n = out.shape[0]
    flat = idx.reshape(-1) % n
    hot = (flat.reshape(-1, 1) == xp.arange(n).reshape(1, -1)).astype(out.dtype).T
    rows = dy.reshape(flat.shape[0], -1)
    # a matmul multiplies every row of dy by 0 for the rows it is not read into: an inf or
    # a NaN there would make NaN of them.  So the finite part goes through the matmul and
    # the non-finite values are counted per row (exactly: counts in a matmul of 0s and 1s)
    # and put back as IEEE sums would give them: NaN, +inf, -inf, or inf + -inf = NaN.
    finite = xp.isfinite(rows)
    total = xp.matmul(hot, xp.where(finite, rows, 0))
    pos = xp.matmul(hot, (rows == xp.inf).astype(out.dtype)) > 0
    neg = xp.matmul(hot, (rows == -xp.inf).astype(out.dtype)) > 0
    nan = xp.matmul(hot, xp.isnan(rows).astype(out.dtype)) > 0
    total = xp.where(pos, xp.inf, xp.where(neg, -xp.inf, total))
    out[...] = xp.where(nan | (pos & neg), xp.nan, total).reshape(out.shape)


register_op(OpDef("gather", ("in", "index"), _gather_infer, _gather_kernel,
                  doc="rows of the input picked by integer index (embedding lookup)"))
register_op(OpDef("gather_grad", ("dy", "index"), _gather_grad_infer, _gather_grad_kernel,
                  doc="dy summed into attr num rows by index (gather's gradient)"))


def _gather_sbp(ins: Any, out: Any, attrs: Attrs) -> list:
    ni = len(ins["index"])
    sigs = [({"in": "B", "index": f"S{i}"}, f"S{i}") for i in range(ni)]
    sigs += [({"in": f"S{j}", "index": "B"}, f"S{ni + j - 1}") for j in range(1, len(ins["in"]))]
    return sigs


def _gather_grad_sbp(ins: Any, out: Any, attrs: Attrs) -> list:
    ni = len(ins["index"])
    sigs = [({"dy": f"S{i}", "index": f"S{i}"}, "P") for i in range(ni)]
    sigs += [({"dy": f"S{ni + j - 1}", "index": "B"}, f"S{j}") for j in range(1, len(out))]
    return sigs


register_sbp("gather", _gather_sbp)
register_sbp("gather_grad", _gather_grad_sbp)
register_grad("gather", lambda F, ctx, dy: {"in": F.gather_grad(
    dy, ctx.inputs["index"], int(ctx.inputs["in"].shape[0]))})


# -- dropout ------------------------------------------------------------------------------------
def _dropout_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    p = float(attrs.get("p", 0.5))
    if not 0.0 <= p < 1.0:
        raise OpError(f"dropout probability must be in [0, 1), got {p}")
    (d,) = ins.values()  # "in" (dropout) or "dy" (dropout_grad)
    _floating(d, "dropout's input")
    return same(d)


def dropout_scale(ctx: KernelContext, shape: tuple[int, ...], dtype: Any,
                  attrs: Attrs) -> Any:
    """keep / (1 - p) for each element: drawn on the host from (seed, piece), so a piece
    gets the same mask on every device and in the forward and backward kernels."""
    p = float(attrs.get("p", 0.5))
    rng = np.random.default_rng([int(attrs.get("seed", 0)), int(ctx.piece_id)])
    keep = rng.random(shape) >= p
    return ctx.xp.asarray((keep / (1.0 - p)).astype(dtype))


def _dropout_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    (x,) = ins.values()
    ctx.xp.multiply(x, dropout_scale(ctx, x.shape, x.dtype, attrs), out=outs["out"])


register_op(OpDef("dropout", ("in",), _dropout_infer, _dropout_kernel,
                  doc="zero each element with probability p, scale the rest by 1/(1-p)"))
register_op(OpDef("dropout_grad", ("dy",), _dropout_infer, _dropout_kernel,
                  doc="dy through the mask dropout drew (same attrs, same piece)"))
register_grad("dropout", lambda F, ctx, dy: {"in": F.dropout_grad(
    dy, float(ctx.attrs.get("p", 0.5)), int(ctx.attrs.get("seed", 0)))})


# -- one_hot ------------------------------------------------------------------------------------
def _one_hot_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    d = ins["in"]
    n = int(attrs["num_classes"])
    if n < 1:
        raise OpError(f"num_classes must be >= 1, got {n}")
    if d.dtype[:3] not in ("int", "uin"):
        raise OpError(f"one_hot takes integer class indices, not {d.dtype}")
    return {"out": BlobDesc((*d.shape, n), "int64")}


def _one_hot_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    xp, x = ctx.xp, ins["in"]
    n = int(attrs["num_classes"])
    if x.size:
        lo, hi = int(x.min().item()), int(x.max().item())
        if lo < 0 or hi >= n:
            raise IndexError(f"class values must be in [0, {n}), got {lo}..{hi}")
    outs["out"][...] = (x.reshape(*x.shape, 1) == xp.arange(n)).astype("int64")


register_op(OpDef("one_hot", ("in",), _one_hot_infer, _one_hot_kernel))
register_sbp("one_hot", lambda ins, out, a: [({"in": f"S{i}"}, f"S{i}")
                                             for i in range(len(out) - 1)])
