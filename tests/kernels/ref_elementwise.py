"""References of the element-wise ops: unary functions (stable forms: logaddexp for
sigmoid and softplus, erfc for gelu), binary and tensor-and-scalar arithmetic,
comparisons, where/masked_fill and the activations' gradient kernels."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from actorflow.kernels import dtype as dt
from tests.kernels.ref_core import REFS, Ref, arith, as_result, calc, f64, ref


# -- element-wise ----------------------------------------------------------------------------
@ref("identity", "sleep", "busy", "fail")
def _identity(ins, attrs, piece):
    return ins["in"].copy()


@ref("relu")
def _relu(ins, attrs, piece):
    x = ins["in"]
    keep = (x > 0) | (np.isnan(x) if x.dtype.kind == "f" else False)
    return np.where(keep, x, np.zeros((), x.dtype)).astype(x.dtype)


@ref("neg")
def _neg(ins, attrs, piece):
    x = ins["in"]
    return as_result(-calc(x, x.dtype.name), x.dtype.name)


def as_float(x: np.ndarray) -> tuple[np.ndarray, str]:
    """An input of a floating function in float64, as the op sees it: converted into its
    float result dtype first (an int32 2**31 - 1 is 2**31 in float32), and that dtype."""
    out = dt.floating(x.dtype.name)
    with np.errstate(all="ignore"):
        return f64(as_result(x, out)), out


def _floating_unary(fn: Callable[[np.ndarray], np.ndarray]) -> Ref:
    def r(ins, attrs, piece):
        x, out = as_float(ins["in"])
        with np.errstate(all="ignore"):
            return as_result(fn(x), out)
    return r


def _stable_sigmoid(x: np.ndarray) -> np.ndarray:
    return np.exp(-np.logaddexp(0.0, -x))  # 1 / (1 + e^-x) with neither side overflowing


_ERFC = np.frompyfunc(math.erfc, 1, 1)


def _gelu64(x: np.ndarray, approximate: str) -> np.ndarray:
    if approximate == "tanh":
        c = math.sqrt(2.0 / math.pi)
        return 0.5 * x * (1.0 + np.tanh(c * (x + 0.044715 * x ** 3)))
    # x * Phi(x) = x/2 * erfc(-x/sqrt 2): no cancellation for large negative x
    return 0.5 * x * np.asarray(_ERFC(-x / math.sqrt(2.0)), np.float64)


REFS["exp"] = _floating_unary(np.exp)
REFS["tanh"] = _floating_unary(np.tanh)
REFS["log"] = _floating_unary(np.log)
REFS["sqrt"] = _floating_unary(np.sqrt)
REFS["rsqrt"] = _floating_unary(lambda x: 1.0 / np.sqrt(x))
REFS["sigmoid"] = _floating_unary(_stable_sigmoid)
REFS["silu"] = _floating_unary(lambda x: x * _stable_sigmoid(x))


@ref("gelu")
def _gelu(ins, attrs, piece):
    x, out = as_float(ins["in"])
    with np.errstate(all="ignore"):
        return as_result(_gelu64(x, attrs.get("approximate", "none")), out)


@ref("softplus")
def _softplus(ins, attrs, piece):
    x64, out = as_float(ins["in"])
    beta, threshold = float(attrs.get("beta", 1.0)), float(attrs.get("threshold", 20.0))
    with np.errstate(all="ignore"):
        y = np.where(x64 * beta > threshold, x64, np.logaddexp(0.0, x64 * beta) / beta)
    return as_result(y, out)


@ref("abs")
def _abs(ins, attrs, piece):
    x = ins["in"]
    if x.dtype == bool:
        return x.copy()
    return as_result(np.where(calc(x, x.dtype.name) < 0, -calc(x, x.dtype.name),
                              calc(x, x.dtype.name)), x.dtype.name)


@ref("sign")
def _sign(ins, attrs, piece):
    x = ins["in"]
    c = calc(x, x.dtype.name)
    s = (c > 0).astype(np.int64) - (c < 0).astype(np.int64)
    if x.dtype.kind == "f":
        s = np.where(np.isnan(c), np.nan, s)
    return as_result(s, x.dtype.name)


@ref("clip")
def _clip(ins, attrs, piece):
    x = ins["in"]
    c = calc(x, x.dtype.name)
    lo, hi = attrs.get("min"), attrs.get("max")
    if lo is not None:
        c = np.where(c < lo, lo, c)
    if hi is not None:
        c = np.where(c > hi, hi, c)
    return as_result(c, x.dtype.name)


@ref("fill_like")
def _fill_like(ins, attrs, piece):
    x = ins["in"]
    return np.full(x.shape, as_result(attrs["value"], x.dtype.name))


# -- binary and scalar ----------------------------------------------------------------------
def _binary_dtype(op: str, a: np.ndarray, b: np.ndarray) -> str:
    d = dt.binary(a.dtype.name, a.ndim, b.dtype.name, b.ndim)
    return dt.floating(d) if op in ("div", "pow") else d


def _scalar_dtype(op: str, x: np.ndarray, s: Any) -> str:
    d = dt.with_scalar(x.dtype.name, dt.scalar_category(s))
    return dt.floating(d) if op in ("div", "rdiv") else d


def _binary_ref(op: str) -> Ref:
    def r(ins, attrs, piece):
        a, b = ins["a"], ins["b"]
        dtype = _binary_dtype(op, a, b)
        return as_result(arith(op, a, b, dtype), dtype)
    return r


for _op in ("add", "sub", "mul", "div", "pow", "maximum", "minimum"):
    REFS[_op] = _binary_ref(_op)


def _scalar_ref(op: str, reverse: bool) -> Ref:
    def r(ins, attrs, piece):
        x, s = ins["in"], attrs["scalar"]
        dtype = _scalar_dtype(op, x, s)
        sv = np.asarray(s)
        res = arith(op, sv, x, dtype) if reverse else arith(op, x, sv, dtype)
        return as_result(res, dtype)
    return r


for _op in ("add", "sub", "mul", "div", "pow"):
    REFS[f"scalar_{_op}"] = _scalar_ref(_op, False)
REFS["scalar_rsub"] = _scalar_ref("sub", True)
REFS["scalar_rdiv"] = _scalar_ref("rdiv", True)
REFS["scalar_rpow"] = _scalar_ref("pow", True)


@ref("add_n")
def _add_n(ins, attrs, piece):
    xs = [ins[k] for k in sorted(ins, key=lambda k: int(k[3:]))]
    dtype = xs[0].dtype.name
    for x in xs[1:]:
        dtype = dt.promote(dtype, x.dtype.name)
    total = calc(xs[0], dtype)
    for x in xs[1:]:
        total = arith("add", total, x, dtype)
    return as_result(total, dtype)


_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
        "gt": np.greater, "ge": np.greater_equal}
_LOGIC = {"logical_and": lambda a, b: (a != 0) & (b != 0),
          "logical_or": lambda a, b: (a != 0) | (b != 0),
          "logical_xor": lambda a, b: (a != 0) != (b != 0)}


def _compare_values(op: str, a: Any, b: Any, dtype: str) -> np.ndarray:
    """Compared in ``dtype`` (OneFlow's promotion of the two; a number converted into
    it as a cast does: an int wraps, a float rounds), exactly."""
    a, b = calc(as_result(a, dtype), dtype), calc(as_result(b, dtype), dtype)
    if op in _LOGIC:
        return _LOGIC[op](a, b)
    return _CMP[op](a, b)


def _cmp_ref(op: str) -> Ref:
    def r(ins, attrs, piece):
        a, b = ins["a"], ins["b"]
        return _compare_values(op, a, b, dt.binary(a.dtype.name, a.ndim, b.dtype.name, b.ndim))
    return r


def _scalar_cmp_ref(op: str) -> Ref:
    def r(ins, attrs, piece):
        x, s = ins["in"], attrs["scalar"]
        return _compare_values(op, x, s, dt.with_scalar(x.dtype.name, dt.scalar_category(s)))
    return r


for _op in (*_CMP, *_LOGIC):
    REFS[_op] = _cmp_ref(_op)
    REFS[f"scalar_{_op}"] = _scalar_cmp_ref(_op)


@ref("logical_not")
def _logical_not(ins, attrs, piece):
    return np.asarray(ins["in"]) == 0


@ref("where", "where_scalar_x", "where_scalar_y")
def _where(ins, attrs, piece):
    dtypes = [ins[k].dtype.name for k in ("x", "y") if k in ins]
    dtype = dtypes[0]
    for d in dtypes[1:]:
        dtype = dt.promote(dtype, d)
    x = ins["x"] if "x" in ins else attrs["x"]
    y = ins["y"] if "y" in ins else attrs["y"]
    return np.where(ins["cond"].astype(bool), as_result(x, dtype), as_result(y, dtype))


@ref("masked_fill")
def _masked_fill(ins, attrs, piece):
    x, m = ins["in"], ins["mask"].astype(bool)
    return np.where(np.broadcast_to(m, x.shape), as_result(attrs["value"], x.dtype.name), x)


@ref("relu_grad")
def _relu_grad(ins, attrs, piece):
    dy, y = ins["dy"], ins["y"]
    return as_result(np.where(y > 0, calc(dy, dy.dtype.name), 0), dy.dtype.name)


@ref("gelu_grad")
def _gelu_grad(ins, attrs, piece):
    dy, x = f64(ins["dy"]), f64(ins["x"])
    tanh_form = attrs.get("approximate", "none") == "tanh"
    # far out the derivative is its limit (1 or 0); the formulas would give 0 * inf there
    far = np.abs(x) > (20.0 if tanh_form else 60.0)
    limit = (x > 0).astype(np.float64)
    x = np.where(far, 0.0, x)
    with np.errstate(all="ignore"):
        if tanh_form:
            c = math.sqrt(2.0 / math.pi)
            t = np.tanh(c * (x + 0.044715 * x ** 3))
            d = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x)
        else:
            cdf = 0.5 * np.asarray(_ERFC(-x / math.sqrt(2.0)), np.float64)
            d = cdf + x * np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
        return as_result(dy * np.where(far, limit, d), ins["dy"].dtype.name)
