"""Element-wise ops: unary, binary (tensor/tensor, broadcasting) and tensor/scalar."""

from __future__ import annotations

import math
from typing import Any

from actorflow.errors import OpError
from actorflow.kernels import dtype as dt
from actorflow.kernels.blob import BlobDesc
from actorflow.kernels.grad import register_grad, sum_to
from actorflow.kernels.ops._infer import broadcast_shape, loop_dtype, same, scalar_as
from actorflow.kernels.registry import (
    Arrays,
    Attrs,
    Blobs,
    InferFn,
    KernelContext,
    KernelFn,
    OpDef,
    register_op,
)


def _floating(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    d = ins["in"]
    return {"out": BlobDesc(d.shape, dt.floating(d.dtype))}


def _no_bool(op_type: str) -> InferFn:
    def infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
        if ins["in"].dtype == "bool":
            raise OpError(f"{op_type} of a bool tensor is not supported (as in torch); use "
                          "logical_not, or cast it to an integer dtype first")
        return same(ins["in"])
    return infer


def _unary(op_type: str, fn_name: str, doc: str, floating: bool = False) -> None:
    """``floating``: integers and bools give float32 (exp, tanh: OneFlow's rule)."""
    def kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
        x, out = ins["in"], outs["out"]  # never in a loop narrower than the result
        getattr(ctx.xp, fn_name)(x, out=out, casting="unsafe", **loop_dtype(out.dtype, x))

    infer = _floating if floating else _no_bool(op_type)
    register_op(OpDef(op_type, ("in",), infer, kernel, doc=doc, ufunc=(fn_name, "t")))


def _identity_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    outs["out"][...] = ins["in"]


def _relu_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    ctx.xp.maximum(ins["in"], 0, out=outs["out"], casting="unsafe")  # bool: the input


register_op(OpDef("identity", ("in",), lambda ins, a: same(ins["in"]), _identity_kernel))
register_op(OpDef("relu", ("in",), lambda ins, a: same(ins["in"]), _relu_kernel,
                  ufunc=("maximum", "t0")))
_unary("neg", "negative", "-x")
_unary("exp", "exp", "e**x", floating=True)
_unary("tanh", "tanh", "tanh(x)", floating=True)

BINARY = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "true_divide",
          "pow": "power", "maximum": "maximum", "minimum": "minimum"}


def _binary_infer(op_type: str) -> InferFn:
    def infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
        a, b = ins["a"], ins["b"]
        if op_type == "sub" and a.dtype == b.dtype == "bool":
            raise OpError("subtraction of two bool tensors is not supported (as in torch and "
                          "numpy); use logical_xor, or cast one to an integer dtype first")
        dtype = dt.binary(a.dtype, len(a.shape), b.dtype, len(b.shape))
        if op_type in ("div", "pow"):  # true division; pow of two tensors (OneFlow)
            dtype = dt.floating(dtype)
        return {"out": BlobDesc(broadcast_shape(a.shape, b.shape), dtype)}
    return infer


def _binary_kernel(fn_name: str) -> KernelFn:
    """Both operands converted into the result dtype, then computed in it, as OneFlow's
    kernels (and a GPU's) do: 3 ** 5 of int8 tensors is 243.0 in float32, int32 -2**31 /
    a float16 tensor is -inf in float16 (the int is converted first), never numpy's narrower
    or wider loop."""
    def kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
        out = outs["out"]
        getattr(ctx.xp, fn_name)(ins["a"], ins["b"], out=out, dtype=out.dtype,
                                 casting="unsafe")
    return kernel


for _t, _fn in BINARY.items():
    # pow has no plain ufunc form: integer tensors give a float result, which numpy's
    # integer power loop would not (it wraps, or refuses negative exponents); the kernel
    # chooses the loop (loop_dtype), a VM calling np.power directly could not
    register_op(OpDef(_t, ("a", "b"), _binary_infer(_t), _binary_kernel(_fn),
                      ufunc=None if _t == "pow" else (_fn, "tt")))


def _scalar_infer(op_type: str) -> InferFn:
    def infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
        d = ins["in"]
        s = attrs["scalar"]
        if not isinstance(s, (int, float, bool)):
            raise OpError(f"attr 'scalar' must be a number, got {type(s).__name__}")
        dtype = dt.with_scalar(d.dtype, dt.scalar_category(s))
        if op_type in ("scalar_div", "scalar_rdiv"):
            dtype = dt.floating(dtype)
        return {"out": BlobDesc(d.shape, dtype)}
    return infer


def _scalar_kernel(fn_name: str, reverse: bool) -> KernelFn:
    def kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
        f, out, x = getattr(ctx.xp, fn_name), outs["out"], ins["in"]
        # the number converted into the result dtype first, as OneFlow does: int8 + 300 adds
        # 44 (numpy would raise OverflowError), float32 x - 1.1187368300199712 subtracts
        # 1.1187368 (numpy would subtract in float64 and round after)
        s = scalar_as(attrs["scalar"], out.dtype)
        if reverse:
            f(s, x, out=out, dtype=out.dtype, casting="unsafe")
        else:
            f(x, s, out=out, dtype=out.dtype, casting="unsafe")
    return kernel


for _t, _fn in BINARY.items():
    if _t in ("maximum", "minimum"):
        continue
    register_op(OpDef(f"scalar_{_t}", ("in",), _scalar_infer(f"scalar_{_t}"),
                      _scalar_kernel(_fn, False), doc=f"x {_t} scalar", ufunc=(_fn, "ts")))
    if _t in ("sub", "div", "pow"):
        register_op(OpDef(f"scalar_r{_t}", ("in",), _scalar_infer(f"scalar_r{_t}"),
                          _scalar_kernel(_fn, True), doc=f"scalar {_t} x", ufunc=(_fn, "st")))


def _add_n_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    descs = [ins[k] for k in sorted(ins, key=lambda k: int(k[3:]))]
    shape = descs[0].shape
    for d in descs[1:]:
        if d.shape != shape:
            raise OpError(f"all inputs must have one shape, got {[x.shape for x in descs]}")
    dtype = descs[0].dtype
    for d in descs[1:]:
        dtype = dt.promote(dtype, d.dtype)
    return {"out": BlobDesc(shape, dtype)}


def _add_n_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    names = sorted(ins, key=lambda k: int(k[3:]))
    out = outs["out"]
    out[...] = ins[names[0]]
    for k in names[1:]:
        ctx.xp.add(out, ins[k], out=out, casting="unsafe")


register_op(OpDef("add_n", (), _add_n_infer, _add_n_kernel, variadic=True,
                  doc="sum of N same-shaped inputs (P->B boxing)"))


# -- gradient rules (kernels/grad.py) ---------------------------------------------------------
def _ab(ctx: Any) -> tuple[Any, Any]:
    return ctx.inputs["a"], ctx.inputs["b"]


def _binary_grad(da: Any, db: Any) -> Any:
    """A rule from two functions (F, a, b, out, dy) -> the unreduced gradient of a / b."""
    def rule(F: Any, ctx: Any, dy: Any) -> dict[str, Any]:
        a, b = _ab(ctx)
        out = {}
        if "a" in ctx.needs:
            out["a"] = sum_to(F, da(F, a, b, ctx.out, dy), a.shape)
        if "b" in ctx.needs:
            out["b"] = sum_to(F, db(F, a, b, ctx.out, dy), b.shape)
        return out
    return rule


def _pick(F: Any, win: Any, tie: Any, dy: Any) -> Any:
    """dy where ``win``, half of it where ``tie`` (maximum/minimum share ties evenly)."""
    return F.add(F.where(win, dy, 0.0), F.where(tie, F.mul(dy, 0.5), 0.0))


register_grad("identity", lambda F, ctx, dy: {"in": dy})
register_grad("neg", lambda F, ctx, dy: {"in": F.neg(dy)})
register_grad("exp", lambda F, ctx, dy: {"in": F.mul(dy, ctx.out)})
register_grad("tanh", lambda F, ctx, dy: {"in": F.mul(dy, F.sub(1.0, F.mul(ctx.out, ctx.out)))})
register_grad("add", _binary_grad(lambda F, a, b, y, dy: dy, lambda F, a, b, y, dy: dy))
register_grad("sub", _binary_grad(lambda F, a, b, y, dy: dy, lambda F, a, b, y, dy: F.neg(dy)))
register_grad("mul", _binary_grad(lambda F, a, b, y, dy: F.mul(dy, b),
                                  lambda F, a, b, y, dy: F.mul(dy, a)))
register_grad("div", _binary_grad(lambda F, a, b, y, dy: F.div(dy, b),
                                  lambda F, a, b, y, dy: F.neg(F.div(F.mul(dy, y), b))))
register_grad("pow", _binary_grad(
    lambda F, a, b, y, dy: F.mul(dy, F.mul(b, F.pow(a, F.sub(b, 1.0)))),
    lambda F, a, b, y, dy: F.mul(dy, F.mul(y, F.log(a)))))
register_grad("maximum", _binary_grad(
    lambda F, a, b, y, dy: _pick(F, F.gt(a, b), F.eq(a, b), dy),
    lambda F, a, b, y, dy: _pick(F, F.lt(a, b), F.eq(a, b), dy)))
register_grad("minimum", _binary_grad(
    lambda F, a, b, y, dy: _pick(F, F.lt(a, b), F.eq(a, b), dy),
    lambda F, a, b, y, dy: _pick(F, F.gt(a, b), F.eq(a, b), dy)))


def _scalar_rule(fn: Any) -> Any:
    def rule(F: Any, ctx: Any, dy: Any) -> dict[str, Any]:
        return {"in": fn(F, ctx.inputs["in"], ctx.attrs["scalar"], ctx.out, dy)}
    return rule


register_grad(["scalar_add", "scalar_sub"], _scalar_rule(lambda F, x, s, y, dy: dy))
register_grad("scalar_mul", _scalar_rule(lambda F, x, s, y, dy: F.mul(dy, s)))
register_grad("scalar_div", _scalar_rule(lambda F, x, s, y, dy: F.div(dy, s)))
register_grad("scalar_pow", _scalar_rule(
    lambda F, x, s, y, dy: F.mul(dy, F.mul(F.pow(x, s - 1.0), float(s)))))
register_grad("scalar_rsub", _scalar_rule(lambda F, x, s, y, dy: F.neg(dy)))
register_grad("scalar_rdiv", _scalar_rule(lambda F, x, s, y, dy: F.neg(F.div(F.mul(dy, y), x))))
register_grad("scalar_rpow", _scalar_rule(
    lambda F, x, s, y, dy: F.mul(F.mul(dy, y), math.log(s))))
register_grad("add_n", lambda F, ctx, dy: {k: dy for k in ctx.needs})
