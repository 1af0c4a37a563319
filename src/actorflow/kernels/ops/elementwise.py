"""Element-wise ops: unary, binary (tensor/tensor, broadcasting) and tensor/scalar."""

from __future__ import annotations

import numpy as np

from actorflow.errors import OpError
from actorflow.kernels.blob import BlobDesc
from actorflow.kernels.ops._infer import broadcast_shape, result_dtype, same
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


def _unary(op_type: str, fn_name: str, doc: str) -> None:
    def kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
        getattr(ctx.xp, fn_name)(ins["in"], out=outs["out"])

    register_op(OpDef(op_type, ("in",), lambda ins, a: same(ins["in"]), kernel, doc=doc,
                      ufunc=(fn_name, "t")))


def _identity_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    outs["out"][...] = ins["in"]


def _relu_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    ctx.xp.maximum(ins["in"], 0, out=outs["out"])


register_op(OpDef("identity", ("in",), lambda ins, a: same(ins["in"]), _identity_kernel))
register_op(OpDef("relu", ("in",), lambda ins, a: same(ins["in"]), _relu_kernel,
                  ufunc=("maximum", "t0")))
_unary("neg", "negative", "-x")
_unary("exp", "exp", "e**x")
_unary("tanh", "tanh", "tanh(x)")

BINARY = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "true_divide",
          "pow": "power", "maximum": "maximum", "minimum": "minimum"}


def _binary_infer(op_type: str) -> InferFn:
    def infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
        a, b = ins["a"], ins["b"]
        dtype = result_dtype(a.dtype, b.dtype)
        if op_type == "div" and np.dtype(dtype).kind in "iub":
            dtype = "float64"
        return {"out": BlobDesc(broadcast_shape(a.shape, b.shape), dtype)}
    return infer


def _binary_kernel(fn_name: str) -> KernelFn:
    def kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
        getattr(ctx.xp, fn_name)(ins["a"], ins["b"], out=outs["out"], casting="unsafe")
    return kernel


for _t, _fn in BINARY.items():
    register_op(OpDef(_t, ("a", "b"), _binary_infer(_t), _binary_kernel(_fn), ufunc=(_fn, "tt")))


def _scalar_infer(op_type: str) -> InferFn:
    def infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
        d = ins["in"]
        s = attrs["scalar"]
        if not isinstance(s, (int, float, bool)):
            raise OpError(f"attr 'scalar' must be a number, got {type(s).__name__}")
        dtype = d.dtype
        if isinstance(s, float) and np.dtype(dtype).kind in "iub":
            dtype = "float64"
        if op_type in ("scalar_div", "scalar_rdiv") and np.dtype(dtype).kind in "iub":
            dtype = "float64"
        return {"out": BlobDesc(d.shape, dtype)}
    return infer


def _scalar_kernel(fn_name: str, reverse: bool) -> KernelFn:
    def kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
        f = getattr(ctx.xp, fn_name)
        s = attrs["scalar"]
        if reverse:
            f(s, ins["in"], out=outs["out"], casting="unsafe")
        else:
            f(ins["in"], s, out=outs["out"], casting="unsafe")
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
    return {"out": BlobDesc(shape, result_dtype(*[d.dtype for d in descs]))}


def _add_n_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    names = sorted(ins, key=lambda k: int(k[3:]))
    out = outs["out"]
    out[...] = ins[names[0]]
    for k in names[1:]:
        ctx.xp.add(out, ins[k], out=out, casting="unsafe")


register_op(OpDef("add_n", (), _add_n_infer, _add_n_kernel, variadic=True,
                  doc="sum of N same-shaped inputs (P->B boxing)"))
