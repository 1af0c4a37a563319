"""The magnitude each summing op's error is relative to (``compare.py``): the sum of the
absolute values of the terms it adds, which bounds the rounding error of every order of
addition a GPU may choose.  Each function takes the drawn example and the reference output
and returns an array that broadcasts to the output."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tests.kernels.compare import finite
from tests.kernels.draws import Example


def _axes(attrs: dict, ndim: int) -> tuple[int, ...]:
    a = attrs.get("axis")
    if a is None:
        return tuple(range(ndim))
    a = [a] if isinstance(a, int) else a
    return tuple(sorted({int(x) % max(ndim, 1) for x in a})) if ndim else ()


def reduce_sum(ex: Example, want: np.ndarray) -> np.ndarray:
    x = finite(ex.ins["in"])
    return x.sum(axis=_axes(ex.attrs, x.ndim), keepdims=bool(ex.attrs.get("keepdims")))


def reduce_mean(ex: Example, want: np.ndarray) -> np.ndarray:
    """The mean of |x| (the sum's error divided by n), unbounded where the sum itself
    overflows the dtype (a GPU sums first: [max, max] / 2 is inf there)."""
    x = finite(ex.ins["in"])
    axes = _axes(ex.attrs, x.ndim)
    n = max(math.prod(x.shape[a] for a in axes), 1)
    total = x.sum(axis=axes, keepdims=bool(ex.attrs.get("keepdims")))
    top = float(np.finfo(want.dtype).max)
    return np.where(total > top, np.inf, total / n * 2)


def add_n(ex: Example, want: np.ndarray) -> np.ndarray:
    return sum(finite(v) for v in ex.ins.values())


def matmul(ex: Example, want: np.ndarray) -> np.ndarray:
    a, b = finite(ex.ins["a"]), finite(ex.ins["b"])
    if ex.attrs.get("transpose_a"):
        a = np.swapaxes(a, -1, -2)
    if ex.attrs.get("transpose_b"):
        b = np.swapaxes(b, -1, -2)
    return a @ b


def _n(ex: Example, key: str = "in") -> int:
    x = ex.ins[key]
    return x.shape[int(ex.attrs.get("axis", -1))] if x.ndim else 1


def softmax(ex: Example, want: np.ndarray) -> np.ndarray:
    return (_n(ex) + 2) * finite(want)


def log_softmax(ex: Example, want: np.ndarray) -> np.ndarray:
    """(x - m) - log(sum): the subtraction's error is relative to |x - m|, the log's to
    log(n); never to |m| (a kernel computing x - (m + log sum) cancels m's digits)."""
    x = finite(ex.ins["in"]) * np.sign(np.nan_to_num(ex.ins["in"].astype(np.float64)))
    axis = int(ex.attrs.get("axis", -1)) if x.ndim else None
    top = x.max(axis=axis, keepdims=True) if x.size else x
    return 2 * (np.abs(x - top) + math.log(max(_n(ex), 1)) + 1.0) + finite(want)


def _ln_scale(x: np.ndarray, attrs: dict) -> tuple[np.ndarray, np.ndarray, int]:
    k = int(attrs.get("normalized_ndim", 1))
    axes = tuple(range(x.ndim - k, x.ndim))
    n = math.prod(x.shape[a] for a in axes)
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    rstd = 1.0 / np.sqrt(var + float(attrs.get("eps", 1e-5)))
    top = np.abs(x).max(axis=axes, keepdims=True)
    return rstd, top, n


def layer_norm(ex: Example, want: np.ndarray) -> np.ndarray:
    """(x - mean) * rstd: the subtraction's error is about eps * max|x|, times rstd."""
    rstd, top, n = _ln_scale(ex.ins["in"].astype(np.float64), ex.attrs)
    return (n + 2) * (top * rstd + finite(want))


def layer_norm_grad(ex: Example, want: np.ndarray) -> np.ndarray:
    x, dy = ex.ins["x"].astype(np.float64), finite(ex.ins["dy"])
    rstd, top, n = _ln_scale(x, ex.attrs)
    axes = tuple(range(x.ndim - int(ex.attrs.get("normalized_ndim", 1)), x.ndim))
    dtop = dy.max(axis=axes, keepdims=True)
    xhat = top * rstd + 1.0
    return (n + 2) * rstd * dtop * xhat * xhat * (1.0 + top * rstd)


def cross_entropy(ex: Example, want: np.ndarray) -> np.ndarray:
    """(m - x[target]) + log(sum): relative to |m - x[target]| and log(C), not to |m|."""
    x = np.nan_to_num(ex.ins["logits"].astype(np.float64), posinf=0.0, neginf=0.0)
    if not x.size:
        return finite(want)
    t = np.clip(ex.ins["target"].astype(np.int64), 0, x.shape[1] - 1)
    gap = x.max(axis=1) - x[np.arange(len(t)), t]
    return 2 * (np.abs(gap) + math.log(x.shape[1]) + 1.0) + finite(want)


def cross_entropy_grad(ex: Example, want: np.ndarray) -> np.ndarray:
    dy = finite(ex.ins["dy"])
    return (ex.ins["logits"].shape[1] + 2) * dy[:, None]


def gather_grad(ex: Example, want: np.ndarray) -> np.ndarray:
    dy, idx = finite(ex.ins["dy"]), ex.ins["index"].astype(np.int64).reshape(-1)
    n = int(ex.attrs["num"])
    rows = dy.reshape(idx.shape[0], math.prod(dy.shape[ex.ins["index"].ndim:]))
    out = np.zeros((n, rows.shape[1]))
    np.add.at(out, idx % n, rows)
    return out.reshape(want.shape) * 2


def erf_fit(key: str) -> Any:
    """gelu (exact form) uses an erf fit documented to ~1.2e-7 (absolute): the error is
    that times |x| (or |dy|), whatever the dtype."""
    def mag(ex: Example, want: np.ndarray) -> np.ndarray:
        if ex.attrs.get("approximate", "none") == "tanh":
            return finite(want) + finite(ex.ins[key]) * 4
        eps = float(np.finfo(want.dtype).eps)
        scale = 2e-7 / (16 * eps)
        return finite(want) + finite(ex.ins[key]) * max(scale, 4.0)
    return mag


def scaled(k: float) -> Any:
    """|want| plus k times the magnitude of the inputs (ops that cancel terms)."""
    def mag(ex: Example, want: np.ndarray) -> np.ndarray:
        m = finite(want)
        for v in ex.ins.values():
            if v.dtype.kind == "f" and v.shape == want.shape:
                m = m + k * finite(v)
        return m
    return mag
