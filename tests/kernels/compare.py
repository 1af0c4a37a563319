"""How an op's output is compared with its reference: a GPU's tolerances, not numpy's bits.

Integers and bools must be equal.  Floats are within ``ulps`` units of the result dtype's
epsilon of the reference, relative to a *magnitude*: ``|want|`` for an element-wise op, and
for an op that sums (reductions, matmul, softmax, layer_norm, ...) the sum of the absolute
values of its terms, because a GPU adds them in another order and only that bound holds
for every order.  NaN matches NaN, infinities match themselves; a result that rounds past
the largest finite value may be that value or infinity; where the magnitude itself
overflows the dtype (an intermediate sum can overflow in one order and not in another) any
result is accepted.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# ulps of the result dtype, by kind of op
TIERS = {
    "exact": 0,  # copies, selections, comparisons: bit-equal (NaN matches NaN)
    "arith": 2,  # one correctly rounded operation (+ - * /), a cast of a computed value
    "transcendental": 8,  # exp, log, tanh, pow, sqrt: libm/CUDA math within a few ulps
    "composite": 16,  # several roundings: sigmoid, softplus, silu, gelu, softmax, ...
    "reduction": 16,  # sums in any order: relative to the sum of |terms|
}


def finite(x: Any) -> np.ndarray:
    """|x| with NaN and infinities as 0: the magnitude of the finite terms."""
    a = np.abs(np.asarray(x, np.float64))
    return np.where(np.isfinite(a), a, 0.0)


def mismatches(got: np.ndarray, want: np.ndarray, ulps: int,
               mag: np.ndarray | None = None) -> np.ndarray:
    """A bool array: True where ``got`` is not within tolerance of ``want``."""
    if want.dtype.kind != "f":
        return np.asarray(got != want)
    fi = np.finfo(want.dtype)
    g, w = got.astype(np.float64), want.astype(np.float64)
    with np.errstate(all="ignore"):
        same = (g == w) | (np.isnan(g) & np.isnan(w))
        m = finite(w) if mag is None else np.maximum(finite(w), np.broadcast_to(
            np.asarray(mag, np.float64), w.shape))
        bound = ulps * float(fi.eps) * m + ulps * float(fi.tiny)
        close = np.abs(g - w) <= bound
        big = float(fi.max) / (1.0 + max(ulps, 1) * float(fi.eps))
        # one side rounded to +-inf, the other to a value at the top of the range
        edge = (np.sign(g) == np.sign(w)) & (np.isinf(g) | np.isinf(w)) & (
            np.minimum(np.abs(g), np.abs(w)) >= big)
        unbounded = m > float(fi.max) if mag is not None else np.zeros(w.shape, bool)
    return ~(same | close | edge | unbounded)


def assert_matches(got: Any, want: np.ndarray, *, what: str, ulps: int,
                   mag: np.ndarray | None = None, inputs: dict | None = None) -> None:
    """``got`` equals ``want`` in shape and dtype and is within tolerance; the message
    names ``what`` ran and shows the inputs and the first elements that differ."""
    got = np.asarray(got)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, expected {want.dtype}"
    bad = mismatches(got, want, ulps, mag)
    if bad.any():
        idx = [tuple(int(i) for i in ix) for ix in np.argwhere(bad)[:4]]
        rows = [f"  at {ix}: got {got[ix]!r}, expected {want[ix]!r}" for ix in idx]
        shown = {k: (v.dtype.name, v.shape, v.ravel()[:8].tolist())
                 for k, v in (inputs or {}).items()}
        raise AssertionError(f"{what}: {int(bad.sum())} of {bad.size} elements differ "
                             f"(tolerance {ulps} ulps)\n" + "\n".join(rows)
                             + f"\n  inputs (dtype, shape, first values): {shown}")
