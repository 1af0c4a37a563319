"""Element-wise ops: unary, binary (tensor/tensor, broadcasting) and tensor/scalar."""

from __future__ import annotations

from actorflow.errors import OpError
from actorflow.kernels import dtype as dt
from actorflow.kernels.blob import BlobDesc
from actorflow.kernels.ops._infer import broadcast_shape, same
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


def _unary(op_type: str, fn_name: str, doc: str, floating: bool = False) -> None:
    """``floating``: integers and bools give float32 (exp, tanh: OneFlow's rule)."""
    def kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
        getattr(ctx.xp, fn_name)(ins["in"], out=outs["out"], casting="unsafe")

    infer = _floating if floating else (lambda ins, a: same(ins["in"]))
    register_op(OpDef(op_type, ("in",), infer, kernel, doc=doc))


def _identity_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    outs["out"][...] = ins["in"]


def _relu_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    ctx.xp.maximum(ins["in"], 0, out=outs["out"])


register_op(OpDef("identity", ("in",), lambda ins, a: same(ins["in"]), _identity_kernel))
register_op(OpDef("relu", ("in",), lambda ins, a: same(ins["in"]), _relu_kernel))
_unary("neg", "negative", "-x")
_unary("exp", "exp", "e**x", floating=True)
_unary("tanh", "tanh", "tanh(x)", floating=True)

BINARY = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "true_divide",
          "pow": "power", "maximum": "maximum", "minimum": "minimum"}


def _binary_infer(op_type: str) -> InferFn:
    def infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
        a, b = ins["a"], ins["b"]
        dtype = dt.binary(a.dtype, len(a.shape), b.dtype, len(b.shape))
        if op_type in ("div", "pow"):  # true division; pow of two tensors (OneFlow)
            dtype = dt.floating(dtype)
        return {"out": BlobDesc(broadcast_shape(a.shape, b.shape), dtype)}
    return infer


def _binary_kernel(fn_name: str) -> KernelFn:
    def kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
        getattr(ctx.xp, fn_name)(ins["a"], ins["b"], out=outs["out"], casting="unsafe")
    return kernel


for _t, _fn in BINARY.items():
    register_op(OpDef(_t, ("a", "b"), _binary_infer(_t), _binary_kernel(_fn)))


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
                      _scalar_kernel(_fn, False), doc=f"x {_t} scalar"))
    if _t in ("sub", "div", "pow"):
        register_op(OpDef(f"scalar_r{_t}", ("in",), _scalar_infer(f"scalar_r{_t}"),
                          _scalar_kernel(_fn, True), doc=f"scalar {_t} x"))


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
