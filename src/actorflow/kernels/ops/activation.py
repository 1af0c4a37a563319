"""Element-wise math a model needs: log, sqrt, rsqrt, sigmoid, gelu, silu, softplus, abs,
clip, fill_like, and the fused gradient kernels of relu and gelu.  Each with its gradient
rule, written with functional ops (``kernels/grad.py``)."""

from __future__ import annotations

import math
from typing import Any

from actorflow.errors import OpError
from actorflow.kernels.blob import BlobDesc
from actorflow.kernels.grad import register_grad
from actorflow.kernels.ops._infer import same, scalar_as, work_dtype
from actorflow.kernels.registry import (
    Arrays,
    Attrs,
    Blobs,
    KernelContext,
    KernelFn,
    OpDef,
    register_op,
)
from actorflow.kernels.sbp import register_sbp, unary_rule


def _float_same(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    d = ins["in"]
    return {"out": BlobDesc(d.shape, d.dtype if d.dtype.startswith("float") else "float32")}


def _unary(op_type: str, body: KernelFn, doc: str, float_out: bool = True) -> None:
    register_op(OpDef(op_type, ("in",), _float_same if float_out else
                      (lambda ins, a: same(ins["in"])), body, doc=doc))


def _k(fn: Any) -> KernelFn:
    def kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
        x, out = ins["in"], outs["out"]
        if out.dtype.kind == "f" and x.dtype != work_dtype(out.dtype):  # integers and float16:
            x = x.astype(work_dtype(out.dtype))  # in float32 or the result's dtype (log of int8
        fn(ctx.xp, x, out, attrs)                # is no float16 log; gelu's fit needs floats)
    return kernel


def _log(xp: Any, x: Any, out: Any, a: Attrs) -> None:
    xp.log(x, out=out, casting="unsafe")


def _sqrt(xp: Any, x: Any, out: Any, a: Attrs) -> None:
    xp.sqrt(x, out=out, casting="unsafe")


def _rsqrt(xp: Any, x: Any, out: Any, a: Attrs) -> None:
    xp.sqrt(x, out=out, casting="unsafe")
    xp.reciprocal(out, out=out)


def _sigmoid(xp: Any, x: Any, out: Any, a: Attrs) -> None:
    # 1 / (1 + e^-x), written so neither branch overflows: e^-|x| <= 1
    e = xp.exp(-xp.abs(x)).astype(out.dtype, copy=False)
    pos = 1.0 / (1.0 + e)
    out[...] = xp.where(x >= 0, pos, e * pos)


def erfc_abs(xp: Any, x: Any) -> Any:
    """erfc(|x|) to ~1e-7 relative (Numerical Recipes' Chebyshev fit, any array module)."""
    z = xp.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (
            -0.82215223 + t * 0.17087277))))))))
    return t * xp.exp(-z * z + poly)


def normal_cdf(xp: Any, x: Any) -> Any:
    """Phi(x) = erfc(-x / sqrt 2) / 2, taken from erfc on the side where it is small, so a
    tail stays accurate (Phi(-5) = 2.9e-7 is not 1 + (erfc - 1) / 2 in float32)."""
    half = 0.5 * erfc_abs(xp, x * (1.0 / math.sqrt(2.0)))
    return xp.where(x >= 0, 1.0 - half, half)


def _sigmoid_pair(xp: Any, u: Any) -> tuple[Any, Any]:
    """(sigmoid(u), sigmoid(-u)), neither computed as 1 - the other (no cancellation)."""
    e = xp.exp(-xp.abs(u))
    big, small = 1.0 / (1.0 + e), e / (1.0 + e)
    return xp.where(u >= 0, big, small), xp.where(u >= 0, small, big)


_SQRT_2_PI = math.sqrt(2.0 / math.pi)


def _gelu(xp: Any, x: Any, out: Any, a: Attrs) -> None:
    if a.get("approximate", "none") == "tanh":
        # 0.5 (1 + tanh u) = sigmoid(2u): no 1 + tanh cancelling for a negative x
        s, _ = _sigmoid_pair(xp, 2.0 * _SQRT_2_PI * (x + 0.044715 * x * x * x))
        out[...] = x * s
    else:
        out[...] = x * normal_cdf(xp, x)


def _silu(xp: Any, x: Any, out: Any, a: Attrs) -> None:
    _sigmoid(xp, x, out, a)
    xp.multiply(out, x, out=out, casting="unsafe")


def _softplus(xp: Any, x: Any, out: Any, a: Attrs) -> None:
    beta, threshold = float(a.get("beta", 1.0)), float(a.get("threshold", 20.0))
    bx = x * beta
    # log(1 + e^bx) / beta, stable: max(bx, 0) + log1p(e^-|bx|); linear past threshold
    soft = (xp.maximum(bx, 0) + xp.log1p(xp.exp(-xp.abs(bx)))) / beta
    out[...] = xp.where(bx > threshold, x, soft)


def _abs(xp: Any, x: Any, out: Any, a: Attrs) -> None:
    xp.abs(x, out=out)


def _clip(xp: Any, x: Any, out: Any, a: Attrs) -> None:
    lo, hi = a.get("min"), a.get("max")
    out[...] = x
    if lo is not None:
        xp.maximum(out, lo, out=out, dtype=out.dtype, casting="unsafe")  # bounds in the dtype
    if hi is not None:
        xp.minimum(out, hi, out=out, dtype=out.dtype, casting="unsafe")


def _clip_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    if attrs.get("min") is None and attrs.get("max") is None:
        raise OpError("clip needs at least one of min and max")
    return same(ins["in"])


def _fill_like(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    out = outs["out"]
    out.fill(scalar_as(attrs["value"], out.dtype))  # int8 and 300: 44 (a cast, as OneFlow)


_unary("log", _k(_log), "natural logarithm")
_unary("sqrt", _k(_sqrt), "square root")
_unary("rsqrt", _k(_rsqrt), "1 / sqrt(x)")
_unary("sigmoid", _k(_sigmoid), "1 / (1 + e^-x)")
_unary("gelu", _k(_gelu), "x * Phi(x) (attr approximate: 'none' | 'tanh')")
_unary("silu", _k(_silu), "x * sigmoid(x)")
_unary("softplus", _k(_softplus), "log(1 + e^(beta x)) / beta (attrs beta, threshold)")
_unary("abs", _k(_abs), "|x|", float_out=False)
register_op(OpDef("clip", ("in",), _clip_infer, _k(_clip), doc="min(max(x, min), max)"))
register_op(OpDef("fill_like", ("in",), lambda ins, a: same(ins["in"]), _fill_like,
                  doc="a tensor shaped like the input, every element attr value"))


# -- fused gradient kernels (no gradient of their own) ------------------------------------
def _relu_grad(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    # where, not dy * (y > 0): an inf or NaN dy where y <= 0 gives 0, not NaN
    outs["out"][...] = ctx.xp.where(ins["y"] > 0, ins["dy"], 0)


def _gelu_grad(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    xp, x, dy = ctx.xp, ins["x"], ins["dy"]
    if x.dtype != work_dtype(x.dtype):  # float16: the derivative's terms cancel
        x = x.astype(work_dtype(x.dtype))
    tanh_form = attrs.get("approximate", "none") == "tanh"
    # past +-10 (tanh form) or +-40 the derivative is exactly its limit, 1 or 0; clipped
    # there so x**2 and x**3 cannot overflow into 0 * inf = NaN
    x = xp.clip(x, -10.0, 10.0) if tanh_form else xp.clip(x, -40.0, 40.0)
    if tanh_form:
        # d/dx x sigmoid(2u) = s + 2 x s (1 - s) u', with 1 - s = sigmoid(-2u) (stable)
        s, not_s = _sigmoid_pair(xp, 2.0 * _SQRT_2_PI * (x + 0.044715 * x * x * x))
        d = s + 2.0 * x * s * not_s * _SQRT_2_PI * (1.0 + 3 * 0.044715 * x * x)
    else:
        pdf = xp.exp(-0.5 * x * x) * (1.0 / math.sqrt(2.0 * math.pi))
        d = normal_cdf(xp, x) + x * pdf
    xp.multiply(dy, d, out=outs["out"], casting="unsafe")


def _grad_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    dy = ins["dy"]
    for k, d in ins.items():
        if d.shape != dy.shape:
            raise OpError(f"input '{k}' has shape {d.shape}, dy {dy.shape}")
    return same(dy)


def _gelu_grad_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    dy, x = ins["dy"], ins["x"]
    if not dy.dtype.startswith("float") or x.dtype != dy.dtype:
        raise OpError(f"dy and x must be of one floating dtype, got {dy.dtype} and {x.dtype}")
    return _grad_infer(ins, attrs)


register_op(OpDef("relu_grad", ("dy", "y"), _grad_infer, _relu_grad,
                  doc="dy where y > 0, else 0"))
register_op(OpDef("gelu_grad", ("dy", "x"), _gelu_grad_infer, _gelu_grad, doc="dy * gelu'(x)"))

register_sbp(["log", "sqrt", "rsqrt", "sigmoid", "gelu", "silu", "softplus", "abs", "clip",
              "fill_like"], unary_rule(linear=False))
register_sbp(["relu_grad", "gelu_grad"], lambda ins, out, a: [
    ({k: f"S{i}" for k in ins}, f"S{i}") for i in range(len(out))])


# -- gradient rules -----------------------------------------------------------------------
def _rule(fn: Any) -> Any:
    def rule(F: Any, ctx: Any, dy: Any) -> dict[str, Any]:
        return {"in": fn(F, ctx.inputs["in"], ctx.out, dy, ctx.attrs)}
    return rule


register_grad("log", _rule(lambda F, x, y, dy, a: F.div(dy, x)))
register_grad("sqrt", _rule(lambda F, x, y, dy, a: F.div(F.mul(dy, 0.5), y)))
register_grad("rsqrt", _rule(lambda F, x, y, dy, a: F.mul(F.mul(dy, -0.5), F.div(y, x))))
register_grad("sigmoid", _rule(lambda F, x, y, dy, a: F.mul(dy, F.mul(y, F.sub(1.0, y)))))
register_grad("gelu", _rule(lambda F, x, y, dy, a: F.gelu_grad(
    dy, x, a.get("approximate", "none"))))
register_grad("silu", _rule(lambda F, x, y, dy, a: F.mul(dy, _silu_d(F, x))))
register_grad("softplus", _rule(lambda F, x, y, dy, a: F.mul(dy, F.sigmoid(
    F.mul(x, float(a.get("beta", 1.0)))))))
register_grad("abs", _rule(lambda F, x, y, dy, a: F.mul(dy, F.sign(x))))
register_grad("clip", _rule(lambda F, x, y, dy, a: F.mul(dy, _inside(F, x, a))))
register_grad("fill_like", lambda F, ctx, dy: {})
register_grad("relu", _rule(lambda F, x, y, dy, a: F.relu_grad(dy, y)))


def _silu_d(F: Any, x: Any) -> Any:
    s = F.sigmoid(x)
    return F.mul(s, F.add(F.mul(x, F.sub(1.0, s)), 1.0))


def _inside(F: Any, x: Any, a: Attrs) -> Any:
    """1 where clip passed x through (the bounds themselves included, as PyTorch), else 0."""
    m = None
    if a.get("min") is not None:
        m = F.ge(x, float(a["min"]))
    if a.get("max") is not None:
        hi = F.le(x, float(a["max"]))
        m = hi if m is None else F.logical_and(m, hi)
    return F.cast(m, x.dtype)
