"""The references' registry and their shared arithmetic: ``REFS[op_type](ins, attrs,
piece)``; values converted into a result dtype as OneFlow converts them, computed exactly
in float64 / int64 / bool, rounded once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

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
    """Round a float64/int64 result (or a Python number) to ``dtype`` once (ints wrap, as
    a GPU's do)."""
    x = np.asarray(x)
    with np.errstate(all="ignore"):
        if np.dtype(dtype).kind in "iu" and x.dtype.kind in "iu":
            return x.astype(np.int64).astype(dtype)
        return x.astype(dtype)


def calc(x: Any, dtype: str) -> np.ndarray:
    """``x`` as the type the result is computed in: float64, int64 or bool."""
    kind = np.dtype(dtype).kind
    if kind == "f":
        return f64(x)
    if kind == "b":
        return np.asarray(x).astype(bool)
    return np.asarray(x).astype(np.int64)


def axis_of(attrs: dict, ndim: int = 1) -> Any:
    """The reduced axes; a 0-d tensor's axis 0 or -1 is the tensor itself (as torch)."""
    a = attrs.get("axis")
    if ndim == 0:
        return None
    return tuple(a) if isinstance(a, (list, tuple)) else a


def arith(op: str, a: Any, b: Any, dtype: str) -> Any:
    """``a op b`` as OneFlow computes it: both operands converted to the result dtype
    (a Python number too: ints wrap, floats round), the operation exact in float64 /
    int64 / bool, then rounded once."""
    a, b = calc(as_result(a, dtype), dtype), calc(as_result(b, dtype), dtype)
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
                return int_pow(a, b)
            res = np.power(a, b)
            # IEEE 754 (C's pow, numpy's float16/float32 loops): pow(-inf, y) is +inf for
            # y > 0 and +0 for y < 0 unless y is an odd integer; numpy's float64 loop says nan
            neg_inf = np.isneginf(a) & ~np.isnan(b) & (np.mod(b, 2) != 1) & np.isnan(res)
            return np.where(neg_inf, np.where(b > 0, np.inf, 0.0), res)
        if op in ("maximum", "minimum"):
            pick = a >= b if op == "maximum" else a <= b
            out = np.where(pick, a, b)
            if np.dtype(dtype).kind == "f":
                out = np.where(np.isnan(a) | np.isnan(b), np.nan, out)
            return out
    raise KeyError(op)


def int_pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
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
