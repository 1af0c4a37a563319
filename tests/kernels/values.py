"""Hypothesis strategies for the op oracle: dtypes, shapes and values at their edges.

Floats mix ordinary numbers with the values kernels get wrong: +-1e3 (softmax, exp and
log_softmax overflow without care), the largest finite values (overflow), the smallest
normal and subnormal numbers, +-0.0, NaN and +-inf.  Integers reach their type's limits.
Shapes include 0-d tensors and empty axes.  A ``Dom`` narrows the values where an op's
result is only defined on part of them (indices, a cast to an integer type).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

FLOATS = ("float16", "float32", "float64")
INTS = ("uint8", "int8", "int16", "int32", "int64")
NUMBERS = (*INTS, *FLOATS)
ALL = ("bool", *NUMBERS)


@dataclass(frozen=True)
class Dom:
    """Which values to draw: a closed range (None: the dtype's own), NaN, +-inf."""

    lo: float | None = None
    hi: float | None = None
    nan: bool = True
    inf: bool = True


ANY = Dom()
FINITE = Dom(nan=False, inf=False)
MODERATE = Dom(-1e3, 1e3, nan=False, inf=False)  # where the result is well conditioned
UNIT = Dom(-4.0, 4.0, nan=False, inf=False)


def _float_specials(dtype: str, dom: Dom) -> list[float]:
    fi = np.finfo(dtype)
    vals = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 1e3, -1e3, 999.0, -998.0, 30.0, -30.0,
            float(fi.max), -float(fi.max), float(fi.tiny), -float(fi.tiny),
            float(fi.smallest_subnormal), -float(fi.smallest_subnormal), 88.5, -88.5,
            11.0, -17.0, 710.0, -745.0]
    if dom.nan:
        vals.append(float("nan"))
    if dom.inf:
        vals += [float("inf"), float("-inf")]
    lo = -np.inf if dom.lo is None else dom.lo
    hi = np.inf if dom.hi is None else dom.hi
    out = []
    for v in vals:
        c = float(np.asarray(v, dtype))  # as the dtype holds it (1e3 -> inf in no type)
        if np.isnan(c) or (np.isinf(c) and dom.inf) or lo <= c <= hi:
            out.append(c)
    return out


def _inside(v: float, dtype: str, up: bool) -> float:
    """The value of ``dtype`` nearest ``v`` on the inside of a range bound."""
    c = np.asarray(v, dtype)
    if (up and c < v) or (not up and c > v):
        c = np.nextafter(c, np.asarray(np.inf if up else -np.inf, dtype))
    return float(c)


def float_values(dtype: str, dom: Dom = ANY) -> st.SearchStrategy[float]:
    width = np.dtype(dtype).itemsize * 8
    fi = np.finfo(dtype)
    lo = -float(fi.max) if dom.lo is None else _inside(max(dom.lo, -float(fi.max)), dtype, True)
    hi = float(fi.max) if dom.hi is None else _inside(min(dom.hi, float(fi.max)), dtype, False)
    ordinary = st.floats(max(lo, -8.0), min(hi, 8.0), width=width) if lo <= 8 and hi >= -8 \
        else st.floats(lo, hi, width=width)
    anywhere = st.floats(lo, hi, width=width, allow_nan=False, allow_infinity=False)
    return st.one_of(st.sampled_from(_float_specials(dtype, dom)), ordinary, anywhere)


def int_values(dtype: str, dom: Dom = ANY) -> st.SearchStrategy[int]:
    ii = np.iinfo(dtype)
    lo = int(ii.min) if dom.lo is None else max(int(dom.lo), int(ii.min))
    hi = int(ii.max) if dom.hi is None else min(int(dom.hi), int(ii.max))
    specials = [v for v in (0, 1, -1, 2, lo, hi, lo + 1, hi - 1) if lo <= v <= hi]
    return st.one_of(st.sampled_from(specials), st.integers(max(lo, -9), min(hi, 9)),
                     st.integers(lo, hi))


def values(dtype: str, dom: Dom = ANY) -> st.SearchStrategy[Any]:
    kind = np.dtype(dtype).kind
    if kind == "b":
        return st.booleans()
    if kind == "f":
        return float_values(dtype, dom)
    return int_values(dtype, dom)


def shapes(min_dims: int = 0, max_dims: int = 3, min_side: int = 0,
           max_side: int = 4) -> st.SearchStrategy[tuple[int, ...]]:
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


def arrays(dtype: str, shape: Any, dom: Dom = ANY) -> st.SearchStrategy[np.ndarray]:
    """Arrays of ``dtype`` and ``shape`` (a tuple or a strategy of them) with edge values."""
    return hnp.arrays(np.dtype(dtype), shape, elements=values(dtype, dom), fill=st.nothing())


def dtypes(names: tuple[str, ...] = ALL) -> st.SearchStrategy[str]:
    return st.sampled_from(names)


def scalars(dom: Dom = ANY) -> st.SearchStrategy[Any]:
    """Python numbers as a functional op receives them: bools, ints (beyond int8 and
    uint8 too), floats at their edges."""
    lo = -1e300 if dom.lo is None else dom.lo
    hi = 1e300 if dom.hi is None else dom.hi
    ints = st.one_of(st.sampled_from([v for v in (0, 1, -1, 2, 3, 300, -129, 70000, 2 ** 40)
                                      if lo <= v <= hi]),
                     st.integers(int(max(lo, -2 ** 62)), int(min(hi, 2 ** 62))))
    return st.one_of(st.booleans(), ints, float_values("float64", dom))
