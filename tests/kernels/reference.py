"""Numerically stable numpy references for every op, written apart from the kernels.

``REFS[op_type](ins, attrs, piece)`` gives the op's expected output.  Floating results are
computed in float64 (``longdouble`` where float64 itself would round badly) with formulas
chosen for stability (``logaddexp`` for softplus/sigmoid, ``erfc`` for gelu, the max
subtracted before ``exp``), then rounded once to the result dtype; integer results are
computed in int64 and wrap to the result dtype as a GPU's would.  Result dtypes follow
OneFlow's promotion (``kernels/dtype.py``), not numpy's.  A reference never calls a kernel.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from actorflow.kernels import dtype as dt

Ref = Callable[[dict[str, np.ndarray], dict[str, Any], int], np.ndarray]
REFS: dict[str, Ref] = {}


def ref(*op_types: str) -> Callable[[Ref], Ref]:
    def deco(fn: Ref) -> Ref:
        for t in op_types:
            assert t not in REFS, f"two references for {t}"
            REFS[t] = fn
        return fn
    return deco


def f64(x: Any) -> np.ndarray:
    return np.asarray(x).astype(np.float64)


def as_result(x: Any, dtype: str) -> np.ndarray:
    """Round a float64/int64 result to ``dtype`` once (ints wrap, as a GPU's do)."""
    x = np.asarray(x)
    with np.errstate(all="ignore"):
        if np.dtype(dtype).kind in "iu" and x.dtype.kind in "iu":
            return x.astype(np.int64).astype(dtype)
        return x.astype(dtype)


def _calc(x: Any, dtype: str) -> np.ndarray:
    """``x`` as the type the result is computed in: float64, int64 or bool."""
    kind = np.dtype(dtype).kind
    if kind == "f":
        return f64(x)
    if kind == "b":
        return np.asarray(x).astype(bool)
    return np.asarray(x).astype(np.int64)


def _axis(attrs: dict, default: Any = None) -> Any:
    a = attrs.get("axis", default)
    return tuple(a) if isinstance(a, (list, tuple)) else a


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
    return as_result(-_calc(x, x.dtype.name), x.dtype.name)


def _floating_unary(fn: Callable[[np.ndarray], np.ndarray]) -> Ref:
    def r(ins, attrs, piece):
        x = ins["in"]
        with np.errstate(all="ignore"):
            return as_result(fn(f64(x)), dt.floating(x.dtype.name))
    return r


def _stable_sigmoid(x: np.ndarray) -> np.ndarray:
    return np.exp(-np.logaddexp(0.0, -x))  # 1 / (1 + e^-x) with neither side overflowing


_ERFC = np.frompyfunc(math.erfc, 1, 1)


def _gelu64(x: np.ndarray, approximate: str) -> np.ndarray:
    if approximate == "tanh":
        c = math.sqrt(2.0 / math.pi)
        return 0.5 * x * (1.0 + np.tanh(c * (x + 0.044715 * x ** 3)))
    # x * Phi(x) = x/2 * erfc(-x/sqrt 2): no cancellation for large negative x
    return 0.5 * x * _ERFC(-x / math.sqrt(2.0)).astype(np.float64)


REFS["exp"] = _floating_unary(np.exp)
REFS["tanh"] = _floating_unary(np.tanh)
REFS["log"] = _floating_unary(np.log)
REFS["sqrt"] = _floating_unary(np.sqrt)
REFS["rsqrt"] = _floating_unary(lambda x: 1.0 / np.sqrt(x))
REFS["sigmoid"] = _floating_unary(_stable_sigmoid)
REFS["silu"] = _floating_unary(lambda x: x * _stable_sigmoid(x))


@ref("gelu")
def _gelu(ins, attrs, piece):
    x = ins["in"]
    with np.errstate(all="ignore"):
        return as_result(_gelu64(f64(x), attrs.get("approximate", "none")),
                         dt.floating(x.dtype.name))


@ref("softplus")
def _softplus(ins, attrs, piece):
    x = ins["in"]
    beta, threshold = float(attrs.get("beta", 1.0)), float(attrs.get("threshold", 20.0))
    with np.errstate(all="ignore"):
        x64 = f64(x)
        y = np.where(x64 * beta > threshold, x64, np.logaddexp(0.0, x64 * beta) / beta)
    return as_result(y, dt.floating(x.dtype.name))


@ref("abs")
def _abs(ins, attrs, piece):
    x = ins["in"]
    return as_result(np.where(_calc(x, x.dtype.name) < 0, -_calc(x, x.dtype.name),
                              _calc(x, x.dtype.name)), x.dtype.name)


@ref("sign")
def _sign(ins, attrs, piece):
    x = ins["in"]
    c = _calc(x, x.dtype.name)
    s = (c > 0).astype(np.int64) - (c < 0).astype(np.int64)
    if x.dtype.kind == "f":
        s = np.where(np.isnan(c), np.nan, s)
    return as_result(s, x.dtype.name)


@ref("clip")
def _clip(ins, attrs, piece):
    x = ins["in"]
    c = _calc(x, x.dtype.name)
    lo, hi = attrs.get("min"), attrs.get("max")
    if lo is not None:
        c = np.where(c < lo, lo, c)
    if hi is not None:
        c = np.where(c > hi, hi, c)
    return as_result(c, x.dtype.name)


@ref("fill_like")
def _fill_like(ins, attrs, piece):
    x = ins["in"]
    return as_result(np.full(x.shape, attrs["value"]), x.dtype.name)


# -- binary and scalar ----------------------------------------------------------------------
def _binary_dtype(op: str, a: np.ndarray, b: np.ndarray) -> str:
    d = dt.binary(a.dtype.name, a.ndim, b.dtype.name, b.ndim)
    return dt.floating(d) if op in ("div", "pow") else d


def _scalar_dtype(op: str, x: np.ndarray, s: Any) -> str:
    d = dt.with_scalar(x.dtype.name, dt.scalar_category(s))
    return dt.floating(d) if op in ("div", "rdiv") else d


def _arith(op: str, a: Any, b: Any, dtype: str) -> Any:
    """``a op b`` computed in the result's type (float64 / int64 / bool)."""
    a, b = _calc(a, dtype), _calc(b, dtype)
    if dtype == "bool":
        return {"add": a | b, "mul": a & b, "maximum": a | b, "minimum": a & b}[op]
    with np.errstate(all="ignore"):
        if op == "add":
            return a + b
        if op == "sub":
            return a - b
        if op == "mul":
            return a * b
        if op in ("div", "rdiv"):
            return a / b
        if op == "pow":
            if np.dtype(dtype).kind in "iu":
                return _int_pow(a, b)
            return np.power(a, b)
        if op in ("maximum", "minimum"):
            pick = a >= b if op == "maximum" else a <= b
            out = np.where(pick, a, b)
            if np.dtype(dtype).kind == "f":
                out = np.where(np.isnan(a) | np.isnan(b), np.nan, out)
            return out
    raise KeyError(op)


def _int_pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer power by squaring in int64 (wrapping); negative exponents as C's integer
    division of 1 by a power: 1, -1 (for a = +-1) or 0."""
    a, b = np.broadcast_arrays(a, b)
    out = np.ones(a.shape, np.int64)
    base, e = a.copy(), b.copy()
    neg = e < 0
    e = np.where(neg, 0, e)
    with np.errstate(all="ignore"):
        while np.any(e > 0):
            odd = (e & 1) == 1
            out = np.where(odd, out * base, out)
            base = base * base
            e >>= 1
    inv = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0))
    return np.where(neg, inv, out)


def _binary_ref(op: str) -> Ref:
    def r(ins, attrs, piece):
        a, b = ins["a"], ins["b"]
        dtype = _binary_dtype(op, a, b)
        return as_result(_arith(op, a, b, dtype), dtype)
    return r


for _op in ("add", "sub", "mul", "div", "pow", "maximum", "minimum"):
    REFS[_op] = _binary_ref(_op)


def _scalar_ref(op: str, reverse: bool) -> Ref:
    def r(ins, attrs, piece):
        x, s = ins["in"], attrs["scalar"]
        dtype = _scalar_dtype(op, x, s)
        sv = np.asarray(s)
        res = _arith(op, sv, x, dtype) if reverse else _arith(op, x, sv, dtype)
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
    total = _calc(xs[0], dtype)
    for x in xs[1:]:
        total = _arith("add", total, x, dtype)
    return as_result(total, dtype)


_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
        "gt": np.greater, "ge": np.greater_equal}
_LOGIC = {"logical_and": lambda a, b: (a != 0) & (b != 0),
          "logical_or": lambda a, b: (a != 0) | (b != 0),
          "logical_xor": lambda a, b: (a != 0) != (b != 0)}


def _compare_values(op: str, a: Any, b: Any) -> np.ndarray:
    if op in _LOGIC:
        return _LOGIC[op](np.asarray(a), np.asarray(b))
    # compare exactly: ints as Python-exact int64, floats as float64 (an int64 beside a
    # float compares as float64, which is what every framework does)
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind == "f" or b.dtype.kind == "f":
        a, b = f64(a), f64(b)
    return _CMP[op](a, b)


for _op in (*_CMP, *_LOGIC):
    REFS[_op] = (lambda o: lambda ins, attrs, piece: _compare_values(o, ins["a"], ins["b"]))(_op)
    REFS[f"scalar_{_op}"] = (lambda o: lambda ins, attrs, piece: _compare_values(
        o, ins["in"], np.asarray(attrs["scalar"])))(_op)


@ref("logical_not")
def _logical_not(ins, attrs, piece):
    return np.asarray(ins["in"]) == 0


@ref("where", "where_scalar_x", "where_scalar_y")
def _where(ins, attrs, piece):
    dtypes = [ins[k].dtype.name for k in ("x", "y") if k in ins]
    dtype = dtypes[0]
    for d in dtypes[1:]:
        dtype = dt.promote(dtype, d)
    x = ins["x"] if "x" in ins else np.asarray(attrs["x"])
    y = ins["y"] if "y" in ins else np.asarray(attrs["y"])
    out = np.where(ins["cond"].astype(bool), _calc(x, dtype), _calc(y, dtype))
    return as_result(out, dtype)


@ref("masked_fill")
def _masked_fill(ins, attrs, piece):
    x, m = ins["in"], ins["mask"].astype(bool)
    out = np.where(np.broadcast_to(m, x.shape), np.asarray(attrs["value"]).astype(np.float64)
                   if x.dtype.kind == "f" else _calc(attrs["value"], x.dtype.name),
                   _calc(x, x.dtype.name))
    return as_result(out, x.dtype.name)


@ref("relu_grad")
def _relu_grad(ins, attrs, piece):
    dy, y = ins["dy"], ins["y"]
    return as_result(np.where(y > 0, _calc(dy, dy.dtype.name), 0), dy.dtype.name)


@ref("gelu_grad")
def _gelu_grad(ins, attrs, piece):
    dy, x = f64(ins["dy"]), f64(ins["x"])
    with np.errstate(all="ignore"):
        if attrs.get("approximate", "none") == "tanh":
            c = math.sqrt(2.0 / math.pi)
            t = np.tanh(c * (x + 0.044715 * x ** 3))
            d = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x)
        else:
            cdf = 0.5 * _ERFC(-x / math.sqrt(2.0)).astype(np.float64)
            d = cdf + x * np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
    return as_result(dy * d, ins["dy"].dtype.name)


# -- linear algebra, reductions ---------------------------------------------------------------
def _mm(a: np.ndarray, b: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "bool":
        return (a.astype(np.int64) @ b.astype(np.int64)) != 0
    return _calc(a, dtype) @ _calc(b, dtype)


@ref("matmul", "batch_matmul")
def _matmul(ins, attrs, piece):
    a, b = ins["a"], ins["b"]
    dtype = dt.promote(a.dtype.name, b.dtype.name)
    if attrs.get("transpose_a"):
        a = np.swapaxes(a, -1, -2)
    if attrs.get("transpose_b"):
        b = np.swapaxes(b, -1, -2)
    with np.errstate(all="ignore"):
        return as_result(_mm(a, b, dtype), dtype)


@ref("bias_add")
def _bias_add(ins, attrs, piece):
    x, b = ins["a"], ins["b"]
    dtype = dt.promote(x.dtype.name, b.dtype.name)
    axis = int(attrs.get("axis", -1)) % x.ndim
    shape = [1] * x.ndim
    shape[axis] = b.shape[0]
    return as_result(_arith("add", x, b.reshape(shape), dtype), dtype)


@ref("softmax")
def _softmax(ins, attrs, piece):
    x = ins["in"]
    axis = int(attrs.get("axis", -1))
    with np.errstate(all="ignore"):
        x64 = f64(x)
        e = np.exp(x64 - x64.max(axis=axis, keepdims=True))
        return as_result(e / e.sum(axis=axis, keepdims=True), dt.floating(x.dtype.name))


@ref("log_softmax")
def _log_softmax(ins, attrs, piece):
    x = ins["in"]
    axis = int(attrs.get("axis", -1))
    with np.errstate(all="ignore"):
        x64 = f64(x)
        m = x64.max(axis=axis, keepdims=True)
        lse = m + np.log(np.exp(x64 - m).sum(axis=axis, keepdims=True))
        return as_result(x64 - lse, x.dtype.name)


def _sum_dtype(x: np.ndarray) -> str:
    return "int64" if x.dtype.kind in "iub" else x.dtype.name


@ref("reduce_sum")
def _reduce_sum(ins, attrs, piece):
    x = ins["in"]
    dtype = _sum_dtype(x)
    with np.errstate(all="ignore"):
        return as_result(_calc(x, dtype).sum(axis=_axis(attrs),
                                             keepdims=bool(attrs.get("keepdims"))), dtype)


@ref("reduce_mean")
def _reduce_mean(ins, attrs, piece):
    x = ins["in"]
    with np.errstate(all="ignore"):
        return as_result(f64(x).mean(axis=_axis(attrs), keepdims=bool(attrs.get("keepdims"))),
                         x.dtype.name)


def _extreme(largest: bool) -> Ref:
    def r(ins, attrs, piece):
        x = ins["in"]
        c = _calc(x, x.dtype.name)
        fn = np.max if largest else np.min  # both propagate NaN, as OneFlow's do
        return as_result(fn(c, axis=_axis(attrs), keepdims=bool(attrs.get("keepdims"))),
                         x.dtype.name)
    return r


REFS["reduce_max"] = _extreme(True)
REFS["reduce_min"] = _extreme(False)


def _arg(largest: bool) -> Ref:
    def r(ins, attrs, piece):
        x = _calc(ins["in"], ins["in"].dtype.name)
        axis = attrs.get("axis")
        if axis is None:
            x = x.reshape(-1)
            axis = 0
        axis = int(axis) % max(x.ndim, 1)
        moved = np.moveaxis(x, axis, -1)
        if moved.dtype.kind == "f":  # the first NaN wins (it is the largest and smallest)
            key = np.where(np.isnan(moved), -np.inf if not largest else np.inf, moved)
            key = -key if not largest else key
            nan = np.isnan(moved)
            idx = np.where(nan.any(axis=-1), nan.argmax(axis=-1),
                           np.argmax(key, axis=-1))
        else:
            idx = np.argmax(moved if largest else -moved.astype(np.float64), axis=-1)
        if attrs.get("keepdims"):
            idx = np.expand_dims(idx, axis) if attrs.get("axis") is not None else \
                idx.reshape([1] * ins["in"].ndim)
        return idx.astype(np.int64)
    return r


REFS["argmax"] = _arg(True)
REFS["argmin"] = _arg(False)


# -- layout -------------------------------------------------------------------------------------
@ref("reshape")
def _reshape(ins, attrs, piece):
    return ins["in"].reshape([int(s) for s in attrs["shape"]]).copy()


@ref("transpose")
def _transpose(ins, attrs, piece):
    x = ins["in"]
    perm = attrs.get("perm")
    return np.transpose(x, None if perm is None else [int(p) for p in perm]).copy()


@ref("cast")
def _cast(ins, attrs, piece):
    with np.errstate(all="ignore"):
        return ins["in"].astype(np.dtype(attrs["dtype"]))


@ref("concat")
def _concat(ins, attrs, piece):
    xs = [ins[k] for k in sorted(ins, key=lambda k: int(k[3:]))]
    dtype = xs[0].dtype.name
    for x in xs[1:]:
        dtype = dt.promote(dtype, x.dtype.name)
    return np.concatenate([as_result(_calc(x, dtype), dtype) for x in xs],
                          axis=int(attrs.get("axis", 0)))


@ref("slice")
def _slice(ins, attrs, piece):
    x = ins["in"]
    idx = [slice(None)] * x.ndim
    idx[int(attrs.get("axis", 0))] = slice(int(attrs["start"]), int(attrs["stop"]))
    return x[tuple(idx)].copy()


def _box(attrs: dict, n: int) -> tuple[slice, ...]:
    step = attrs.get("step") or [1] * n
    return tuple(slice(int(b), int(e), int(s))
                 for b, e, s in zip(attrs["begin"], attrs["end"], step))


@ref("strided_slice", "box_slice")
def _strided_slice(ins, attrs, piece):
    x = ins["in"]
    return x[_box(attrs, x.ndim)].copy()


@ref("strided_slice_grad")
def _strided_slice_grad(ins, attrs, piece):
    dy = ins["dy"]
    out = np.zeros([int(s) for s in attrs["shape"]], dy.dtype)
    out[_box(attrs, out.ndim)] = dy
    return out


@ref("broadcast_to")
def _broadcast_to(ins, attrs, piece):
    return np.broadcast_to(ins["in"], [int(s) for s in attrs["shape"]]).copy()


@ref("microbatch_slice")
def _microbatch_slice(ins, attrs, piece):
    x, n = ins["in"], int(attrs["num"])
    rows = x.shape[0] // n
    i = piece % n
    return x[i * rows:(i + 1) * rows].copy()


@ref("microbatch_place")
def _microbatch_place(ins, attrs, piece):
    x, n = ins["in"], int(attrs["num"])
    out = np.zeros((n, *x.shape), x.dtype)
    out[piece % n] = x
    return out


# -- layers and losses --------------------------------------------------------------------------
def _lse_rows(x: np.ndarray) -> np.ndarray:
    m = x.max(axis=1, keepdims=True)
    return (m + np.log(np.exp(x - m).sum(axis=1, keepdims=True)))[:, 0]


@ref("cross_entropy")
def _cross_entropy(ins, attrs, piece):
    x, t = f64(ins["logits"]), ins["target"].astype(np.int64)
    ignore = int(attrs.get("ignore_index", -100))
    valid = t != ignore
    with np.errstate(all="ignore"):
        picked = x[np.arange(len(t)), np.where(valid, t, 0)]
        loss = np.where(valid, _lse_rows(x) - picked, 0.0)
    return as_result(loss, ins["logits"].dtype.name)


@ref("cross_entropy_grad")
def _cross_entropy_grad(ins, attrs, piece):
    x, t, dy = f64(ins["logits"]), ins["target"].astype(np.int64), f64(ins["dy"])
    ignore = int(attrs.get("ignore_index", -100))
    valid = t != ignore
    with np.errstate(all="ignore"):
        p = np.exp(x - _lse_rows(x)[:, None])
        hot = np.zeros_like(p)
        hot[np.arange(len(t))[valid], t[valid]] = 1.0
        g = np.where(valid[:, None], (p - hot) * dy[:, None], 0.0)
    return as_result(g, ins["logits"].dtype.name)


def _ln_parts(x: np.ndarray, attrs: dict) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    k = int(attrs.get("normalized_ndim", 1))
    axes = tuple(range(x.ndim - k, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + float(attrs.get("eps", 1e-5))), var, axes


@ref("layer_norm")
def _layer_norm(ins, attrs, piece):
    with np.errstate(all="ignore"):
        return as_result(_ln_parts(f64(ins["in"]), attrs)[0], ins["in"].dtype.name)


@ref("layer_norm_grad")
def _layer_norm_grad(ins, attrs, piece):
    x, dy = f64(ins["x"]), f64(ins["dy"])
    with np.errstate(all="ignore"):
        xhat, var, axes = _ln_parts(x, attrs)
        rstd = 1.0 / np.sqrt(var + float(attrs.get("eps", 1e-5)))
        g = rstd * (dy - dy.mean(axis=axes, keepdims=True)
                    - xhat * (dy * xhat).mean(axis=axes, keepdims=True))
    return as_result(g, ins["x"].dtype.name)


@ref("gather")
def _gather(ins, attrs, piece):
    x, idx = ins["in"], ins["index"].astype(np.int64)
    return x[idx % x.shape[0]] if idx.size else np.zeros((*idx.shape, *x.shape[1:]), x.dtype)


@ref("gather_grad")
def _gather_grad(ins, attrs, piece):
    dy, idx = ins["dy"], ins["index"].astype(np.int64).reshape(-1)
    n = int(attrs["num"])
    rows = f64(dy).reshape(idx.shape[0], -1) if idx.size else np.zeros((0, 1))
    out = np.zeros((n, rows.shape[1]))
    np.add.at(out, idx % n, rows)
    return as_result(out.reshape((n, *dy.shape[ins["index"].ndim:])), dy.dtype.name)


def dropout_keep(attrs: dict, piece: int, shape: tuple[int, ...]) -> np.ndarray:
    """The documented rule (kernels/ops/nn_ops.dropout_scale): an element is kept where
    ``default_rng([seed, piece]).random(shape) >= p``."""
    rng = np.random.default_rng([int(attrs.get("seed", 0)), int(piece)])
    return rng.random(shape) >= float(attrs.get("p", 0.5))


@ref("dropout", "dropout_grad")
def _dropout(ins, attrs, piece):
    (x,) = ins.values()
    p = float(attrs.get("p", 0.5))
    keep = dropout_keep(attrs, piece, x.shape)
    return as_result(np.where(keep, f64(x) / (1.0 - p), 0.0), x.dtype.name)


@ref("one_hot")
def _one_hot(ins, attrs, piece):
    x, n = ins["in"].astype(np.int64), int(attrs["num_classes"])
    out = np.zeros((*x.shape, n), np.int64)
    for idx in np.ndindex(*x.shape):
        out[(*idx, x[idx])] = 1
    return out


# -- generators and state -----------------------------------------------------------------------
def _shift(out: np.ndarray, attrs: dict, piece: int) -> np.ndarray:
    return out + attrs.get("piece_scale", 0) * piece if attrs.get("piece_scale") else out


@ref("constant")
def _constant(ins, attrs, piece):
    dtype = attrs.get("dtype", "float32")
    return as_result(_shift(np.full(attrs["shape"], attrs.get("value", 0), np.float64
                                    if np.dtype(dtype).kind == "f" else np.int64),
                            attrs, piece), dtype)


@ref("arange")
def _arange(ins, attrs, piece):
    start, stop, step = attrs.get("start", 0), attrs["stop"], attrs.get("step", 1)
    ints = all(isinstance(v, int) for v in (start, stop, step))
    dtype = attrs.get("dtype") or ("int64" if ints else "float32")
    vals = [start + i * step for i in range(len(np.arange(start, stop, step)))] if not ints \
        else list(range(start, stop, step))
    return as_result(_shift(np.asarray(vals, np.float64 if not ints else np.int64), attrs,
                            piece), dtype)


@ref("random_normal")
def _random_normal(ins, attrs, piece):
    rng = np.random.default_rng([int(attrs.get("seed", 0)), int(piece)])
    v = rng.standard_normal(tuple(attrs["shape"])) * float(attrs.get("std", 1.0)) + float(
        attrs.get("mean", 0.0))
    return v.astype(attrs.get("dtype", "float32"))


def initial_value(attrs: dict) -> np.ndarray:
    shape, dtype = tuple(int(s) for s in attrs["shape"]), attrs.get("dtype", "float32")
    init = attrs.get("init", "zeros")
    if init == "zeros":
        return np.zeros(shape, dtype)
    if init == "constant":
        return np.full(shape, attrs.get("value", 0)).astype(dtype)
    if init == "normal":
        rng = np.random.default_rng(int(attrs.get("seed", 0)))
        return (rng.standard_normal(shape) * float(attrs.get("std", 1.0))
                + float(attrs.get("mean", 0.0))).astype(dtype)
    if init == "uniform":
        rng = np.random.default_rng(int(attrs.get("seed", 0)))
        return rng.uniform(float(attrs["low"]), float(attrs["high"]), shape).astype(dtype)
    if init == "value":
        return np.asarray(attrs["value"], dtype).reshape(shape)
    raise KeyError(init)


@ref("variable")
def _variable(ins, attrs, piece):
    return initial_value(attrs)


@ref("variable_part")
def _variable_part(ins, attrs, piece):
    full = initial_value({**attrs, "shape": attrs["logical_shape"]})
    return full[tuple(slice(int(b), int(e)) for b, e in zip(attrs["begin"], attrs["end"]))]


@ref("const_array")
def _const_array(ins, attrs, piece):
    return np.asarray(attrs["value"], attrs["dtype"]).reshape(attrs["shape"])


@ref("assign")
def _assign(ins, attrs, piece):
    return ins["value"].astype(ins["ref"].dtype)


def lr_reference(t: int, spec: dict) -> float:
    """The schedules as their documents state them (PyTorch / OneFlow closed forms)."""
    kind = spec["kind"]
    if kind == "constant":
        return spec["base_lr"]
    if kind == "step":
        return spec["base_lr"] * spec["gamma"] ** math.floor(t / spec["step_size"])
    if kind == "cosine":
        lo = spec.get("eta_min", 0.0)
        return lo + 0.5 * (spec["base_lr"] - lo) * (1 + math.cos(t * math.pi / spec["T_max"]))
    if kind == "warmup":
        w = spec["warmup_iters"]
        if t >= w:
            return lr_reference(t - w, spec["after"])
        alpha = t / w
        f = spec["warmup_factor"]
        factor = f * (1 - alpha) + alpha if spec.get("method", "linear") == "linear" else f
        return lr_reference(0, spec["after"]) * factor
    raise KeyError(kind)


@ref("learning_rate")
def _learning_rate(ins, attrs, piece):
    step = ins["step"]
    t = int(step.reshape(-1)[0])
    return np.full(step.shape, lr_reference(t, attrs["spec"]), np.float32)


@ref("stamp")
def _stamp(ins, attrs, piece):
    """Only element 0 is specified (the piece id); the rest is whatever the regst held."""
    out = np.zeros(tuple(attrs["shape"]), attrs.get("dtype", "float32"))
    out.reshape(-1)[:1] = piece
    return out
