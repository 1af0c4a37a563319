"""The pieces of the kernel oracle: value strategies that reach a dtype's edges, the
record each op gets, and the comparison with a reference.

An op's record (``Oracle``) draws inputs and attrs (hypothesis) and computes the expected
outputs with a numerically stable numpy reference, in float64 (or exactly, for integer
and bool results).  The test casts the reference to the dtype the op's own inference
gives, so the promotion rules are pinned elsewhere (``tests/oneflow``), and compares
within the rounding a GPU may add (it reduces in another order): ``TOLERANCE``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

FLOATS = ("float16", "float32", "float64")
INTS = ("int8", "int32", "int64", "uint8")
NUMERIC = (*FLOATS, *INTS)
ALL = (*NUMERIC, "bool")

# (rtol, atol) by output dtype: a few ulps of the dtype, what a GPU's other summation order
# and its own exp/tanh may add
TOLERANCE = {"float16": (4e-3, 1e-3), "float32": (2e-5, 1e-6), "float64": (1e-12, 1e-12)}

Arrays = dict[str, np.ndarray]
Draw = Callable[[st.DataObject], tuple[Arrays, dict[str, Any]]]
Ref = Callable[[Arrays, dict[str, Any], dict[str, str]], Arrays]  # (ins, attrs, out dtypes)


@dataclass(frozen=True)
class Oracle:
    """How to draw an op's inputs and attrs, and what its outputs must be.

    ``rtol``: a wider tolerance by output dtype, with the reason in a comment where the
    table sets it (a kernel's documented approximation, e.g. gelu's erf fit).  ``scale``:
    the magnitude of the terms a cancelling result is made of (see below).
    """

    draw: Draw
    ref: Ref
    rtol: dict[str, tuple[float, float]] = field(default_factory=dict)
    # per element, the size of the terms a result is the difference of (float64): an
    # ill-conditioned formula (a gradient that cancels) is held to a few ulps of those
    scale: Callable[[Arrays, dict[str, Any]], np.ndarray] | None = None


def specials(dtype: str) -> list[Any]:
    """The values at a dtype's edges that numpy gives a defined result for."""
    if dtype == "bool":
        return [False, True]
    info: Any
    if np.dtype(dtype).kind == "f":
        info = np.finfo(dtype)
        return [0.0, -0.0, np.inf, -np.inf, np.nan, float(info.tiny) / 4,  # subnormal
                -float(info.tiny) / 4, float(info.max), float(info.min), 1.0, -1.0]
    info = np.iinfo(dtype)
    return [0, 1, int(info.max), int(info.min), int(info.max) - 1]


def elements(dtype: str, bound: float | None = None, special: bool = True,
             positive: bool = False) -> st.SearchStrategy:
    """Values of ``dtype``: ordinary ones within ``bound`` (the dtype's range by default)
    mixed with its edges (``special``); ``positive``: > 0 only (for finite logs...)."""
    if dtype == "bool":
        return st.booleans()
    kind = np.dtype(dtype).kind
    if kind == "f":
        width = np.dtype(dtype).itemsize * 8
        big = float(np.finfo(dtype).max)
        lim = _inside(min(bound, big) if bound is not None else big, dtype)
        base = st.floats(min_value=0.0 if positive else -lim, max_value=lim, width=width,
                         exclude_min=positive, allow_nan=False, allow_infinity=False,
                         allow_subnormal=True)
        edge = [v for v in specials(dtype) if not positive or (isinstance(v, float) and v > 0)]
        if bound is not None:  # the bound holds for finite values; inf/nan stay edges
            edge = [v for v in edge if not np.isfinite(v) or abs(v) <= bound]
        return st.one_of(base, st.sampled_from(edge)) if special and edge else base
    info = np.iinfo(dtype)
    lo, hi = int(info.min), int(info.max)
    if bound is not None:
        lo, hi = max(lo, -int(bound)), min(hi, int(bound))
    if positive:
        lo = max(lo, 1)
    return st.integers(lo, hi)


def _inside(v: float, dtype: str) -> float:
    """``v`` as the nearest value of ``dtype`` no farther from 0 (a bound hypothesis takes)."""
    x = np.asarray(v, dtype=dtype)
    if abs(float(x)) > abs(v):
        x = np.nextafter(x, np.asarray(0, dtype=dtype))
    return float(x)


def shapes(min_dims: int = 0, max_dims: int = 3, max_side: int = 4,
           min_side: int = 0) -> st.SearchStrategy:
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


def array(data: st.DataObject, dtype: str, shape: tuple[int, ...], **kw: Any) -> np.ndarray:
    return np.asarray(data.draw(hnp.arrays(np.dtype(dtype), shape, elements=elements(dtype, **kw),
                                           fill=st.nothing())), dtype=dtype)


def f64(a: Any) -> np.ndarray:
    return np.asarray(a, dtype=np.float64)


def compare(op_type: str, where: str, got: Arrays, want: Arrays, dtypes: dict[str, str],
            wider: dict[str, tuple[float, float]], scale: np.ndarray | None = None) -> None:
    """Each output: its inferred dtype, and the reference cast to it (within tolerance for
    floats, plus 16 ulps of ``scale`` when given; exactly for integers and bools; NaN where
    the reference is NaN)."""
    for k, w in want.items():
        g = got[k]
        dtype = np.dtype(dtypes[k])
        assert g.dtype == dtype, f"{op_type} on {where}: output {k} is {g.dtype}, not {dtype}"
        assert g.shape == np.shape(w), f"{op_type} on {where}: output {k} shape {g.shape}"
        if dtype.kind == "f":
            with np.errstate(all="ignore"):
                ref = np.asarray(w).astype(dtype)
            rtol, atol = wider.get(dtype.name, TOLERANCE[dtype.name])
            if scale is not None:
                finite = np.isfinite(ref) & np.isfinite(g)
                slack = 16 * float(np.finfo(dtype).eps) * np.abs(scale)
                g = np.where(finite & (np.abs(f64(g) - f64(ref)) <= slack), ref, g)
            np.testing.assert_allclose(g, ref, rtol=rtol, atol=atol, equal_nan=True,
                                       err_msg=f"{op_type} on {where}, output {k}")
        else:
            np.testing.assert_array_equal(g, np.asarray(w).astype(dtype),
                                          err_msg=f"{op_type} on {where}, output {k}")
