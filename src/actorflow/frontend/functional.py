"""``actorflow.functional`` (``F``): the ops of a job, each declared once with signatures.

Every op lists its signatures in the order they are tried; the implementations only
build job ops.  Numpy arrays and nested lists given where a ``Tensor`` is expected become
constants placed with the other tensors of the call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from actorflow.errors import CompileError, UsageError
from actorflow.frontend import job as _job
from actorflow.frontend.placement import Placement
from actorflow.frontend.sbp import SbpParallel, as_sbp
from actorflow.frontend.signature import (
    ArrayArg,
    FunctionalOp,
    _NoMatch,
    register_type,
    set_tensor_types,
)
from actorflow.frontend.tensor import Tensor

set_tensor_types(Tensor)


def _placement_arg(v: Any) -> Placement:
    if isinstance(v, Placement):
        return v
    raise _NoMatch


def _sbp_arg(v: Any) -> SbpParallel:
    try:
        return as_sbp(v)
    except TypeError:
        raise _NoMatch from None


register_type("Placement", _placement_arg)
register_type("Sbp", _sbp_arg)


def _finalize(bound: dict) -> dict:
    """Turn numpy arguments into constants of the job of the call's tensors."""
    tensors = [v for v in bound.values() if isinstance(v, Tensor)]
    tensors += [x for v in bound.values() if isinstance(v, list) for x in v
                if isinstance(x, Tensor)]
    job = tensors[0].job if tensors else None
    place = tensors[0].placement if tensors else None

    def fix(v: Any) -> Any:
        if isinstance(v, ArrayArg):
            j = job or _job.current_job()
            return j.constant(v.value, place)
        if isinstance(v, list):
            return [fix(x) for x in v]
        return v

    return {k: fix(v) for k, v in bound.items()}


def define(name: str, overloads: list[tuple[str, Callable[..., Any]]], doc: str = "") -> Any:
    return FunctionalOp(name, overloads, _finalize, doc)


def _add(op_type: str, inputs: dict[str, Tensor], **attrs: Any) -> Tensor:
    first = next(iter(inputs.values()))
    return first.job.add(op_type, inputs, attrs)


def _no_inplace(name: str, inplace: bool) -> None:
    if inplace:
        raise UsageError(f"{name}(): inplace=True is not supported: lazy tensors are immutable")


# -- element-wise binary ops ------------------------------------------------------------------
def _binary(name: str, reverse_op: str | None, doc: str) -> FunctionalOp:
    def tt(input: Tensor, other: Tensor) -> Tensor:
        return _add(name, {"a": input, "b": other})

    def ts(input: Tensor, other: float) -> Tensor:
        return _add(f"scalar_{name}", {"in": input}, scalar=other)

    def st(input: float, other: Tensor) -> Tensor:
        return _add(reverse_op or f"scalar_{name}", {"in": other}, scalar=input)

    return define(name, [("Tensor (Tensor input, Tensor other)", tt),
                         ("Tensor (Tensor input, Scalar other)", ts),
                         ("Tensor (Scalar input, Tensor other)", st)], doc)


add = _binary("add", None, "input + other")
sub = _binary("sub", "scalar_rsub", "input - other")
mul = _binary("mul", None, "input * other")
div = _binary("div", "scalar_rdiv", "input / other")


def _pow_tt(input: Tensor, exponent: Tensor) -> Tensor:
    return _add("pow", {"a": input, "b": exponent})


def _pow_ts_inplace(input: Tensor, exponent: float, inplace: bool = False) -> Tensor:
    _no_inplace("pow", inplace)
    return _add("scalar_pow", {"in": input}, scalar=exponent)


def _pow_ts(input: Tensor, exponent: float) -> Tensor:
    return _add("scalar_pow", {"in": input}, scalar=exponent)


def _pow_st(base: float, exponent: Tensor) -> Tensor:
    return _add("scalar_rpow", {"in": exponent}, scalar=base)


pow = define("pow", [
    ("Tensor (Tensor input, Tensor exponent)", _pow_tt),
    ("Tensor (Tensor input, Scalar exponent, *, Bool inplace=False)", _pow_ts_inplace),
    ("Tensor (Tensor input, Scalar exponent)", _pow_ts),
    ("Tensor (Scalar base, Tensor exponent)", _pow_st),
], "input ** exponent")

maximum = define("maximum", [("Tensor (Tensor input, Tensor other)",
                              lambda input, other: _add("maximum", {"a": input, "b": other}))])
minimum = define("minimum", [("Tensor (Tensor input, Tensor other)",
                              lambda input, other: _add("minimum", {"a": input, "b": other}))])


# -- unary ops --------------------------------------------------------------------------------
def _relu(x: Tensor, inplace: bool = False) -> Tensor:
    _no_inplace("relu", inplace)
    return _add("relu", {"in": x})


relu = define("relu", [("Tensor (Tensor x, Bool inplace=False)", _relu)], "max(x, 0)")
neg = define("neg", [("Tensor (Tensor x)", lambda x: _add("neg", {"in": x}))], "-x")
exp = define("exp", [("Tensor (Tensor x)", lambda x: _add("exp", {"in": x}))], "e ** x")
tanh = define("tanh", [("Tensor (Tensor x)", lambda x: _add("tanh", {"in": x}))], "tanh(x)")
identity = define("identity", [("Tensor (Tensor x)", lambda x: _add("identity", {"in": x}))])
cast = define("cast", [("Tensor (Tensor x, DataType dtype)",
                        lambda x, dtype: _add("cast", {"in": x}, dtype=dtype))])


# -- linear algebra, reductions, layout ------------------------------------------------------
def _matmul(a: Tensor, b: Tensor, transpose_a: bool = False,
            transpose_b: bool = False) -> Tensor:
    return _add("matmul", {"a": a, "b": b}, transpose_a=transpose_a, transpose_b=transpose_b)


matmul = define("matmul", [
    ("Tensor (Tensor a, Tensor b, *, Bool transpose_a=False, Bool transpose_b=False)", _matmul)],
    "2-D matrix product")
bias_add = define("bias_add", [("Tensor (Tensor x, Tensor bias, Int axis=-1)",
                                lambda x, bias, axis: _add("bias_add", {"a": x, "b": bias},
                                                           axis=axis))])
softmax = define("softmax", [("Tensor (Tensor x, Int dim=-1)",
                              lambda x, dim: _add("softmax", {"in": x}, axis=dim))])


def _reduce(op_type: str) -> Callable[..., Tensor]:
    def fn(x: Tensor, dim: tuple[int, ...] | None = None, keepdim: bool = False) -> Tensor:
        return _add(op_type, {"in": x}, axis=None if dim is None else list(dim), keepdims=keepdim)
    return fn


sum = define("sum", [("Tensor (Tensor x, IntList? dim=None, Bool keepdim=False)",
                      _reduce("reduce_sum"))])
mean = define("mean", [("Tensor (Tensor x, IntList? dim=None, Bool keepdim=False)",
                        _reduce("reduce_mean"))])
reshape = define("reshape", [("Tensor (Tensor x, IntList shape)",
                              lambda x, shape: _add("reshape", {"in": x}, shape=list(shape)))])


def _swap(x: Tensor, dim0: int, dim1: int) -> Tensor:
    perm = list(range(x.ndim))
    try:
        perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
    except IndexError:
        raise CompileError(f"transpose(): dims ({dim0}, {dim1}) are out of range for a tensor "
                           f"of rank {x.ndim} {x.shape}") from None
    return _add("transpose", {"in": x}, perm=perm)


transpose = define("transpose", [
    ("Tensor (Tensor x, Int dim0, Int dim1)", _swap),
    ("Tensor (Tensor x, IntList? perm=None)",
     lambda x, perm: _add("transpose", {"in": x}, perm=None if perm is None else list(perm))),
])


def _concat(tensors: list[Tensor], dim: int = 0) -> Tensor:
    return _add("concat", {f"in_{i}": t for i, t in enumerate(tensors)}, axis=dim)


concat = define("concat", [("Tensor (TensorList tensors, Int dim=0)", _concat)])


def _to_global(x: Tensor, placement: Placement | None = None,
               sbp: SbpParallel | None = None) -> Tensor:
    from actorflow.frontend.job import _check_axis

    if sbp is not None:
        _check_axis(x.name, sbp, x.ndim)
        if sbp.code == "P":
            raise UsageError(f"to_global(): '{x.name}' cannot be boxed into partial_sum; only "
                             "ops produce partial sums (e.g. matmul of split inner axes)")
    return x.job.add("to_global", {"in": x}, place=placement, sbp=sbp)


to_global = define("to_global", [
    ("Tensor (Tensor x, Placement? placement=None, Sbp? sbp=None)", _to_global)],
    "the same values on another placement and/or SBP (the compiler inserts boxing)")

__all__ = ["add", "bias_add", "cast", "concat", "div", "exp", "identity", "matmul", "maximum",
           "mean", "minimum", "mul", "neg", "pow", "relu", "reshape", "softmax", "sub", "sum",
           "tanh", "to_global", "transpose"]
