"""What the oracle draws for each kind of op: inputs, attrs and the piece, as an ``Example``.

Each function returns a hypothesis strategy of examples for one family of ops (unary,
binary with broadcasting, tensor-and-scalar, reductions over any axes, ...); the op table
(``tests/kernels/op_table.py``) gives every op its strategy.  Only the values for which
numpy defines the result are drawn where an op has a domain (indices in range, a float cast
to an integer type within that type); everything else reaches its edges.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tests.kernels.values import (
    ALL,
    ANY,
    FLOATS,
    INTS,
    MODERATE,
    Dom,
    arrays,
    dtypes,
    scalars,
    shapes,
    values,
)


@dataclass
class Example:
    ins: dict[str, np.ndarray]
    attrs: dict[str, Any] = field(default_factory=dict)
    piece: int = 0


S = st.SearchStrategy
pieces = st.sampled_from([0, 1, 2, 7])


def _pair_shapes(n: int = 2, min_dims: int = 0) -> S:
    return hnp.mutually_broadcastable_shapes(num_shapes=n, min_dims=min_dims, max_dims=3,
                                             min_side=0, max_side=4).map(lambda r: r.input_shapes)


@st.composite
def unary(draw: Any, names: tuple[str, ...] = ALL, dom: Dom = ANY, attrs: S | None = None,
          shape: S | None = None, key: str = "in") -> Example:
    d = draw(dtypes(names))
    return Example({key: draw(arrays(d, shape or shapes(), dom))},
                   draw(attrs) if attrs is not None else {})


@st.composite
def binary(draw: Any, names: tuple[str, ...] = ALL, dom: Dom = ANY, no_bool_pair: bool = False,
           keys: tuple[str, str] = ("a", "b")) -> Example:
    sa, sb = draw(_pair_shapes())
    da, db = draw(dtypes(names)), draw(dtypes(names))
    if no_bool_pair and da == db == "bool":
        db = "int8"
    return Example({keys[0]: draw(arrays(da, sa, dom)), keys[1]: draw(arrays(db, sb, dom))})


@st.composite
def with_scalar(draw: Any, names: tuple[str, ...] = ALL, int_exponent: bool = False,
                rpow: bool = False) -> Example:
    """A tensor and a Python number.  An integer power of integers has no negative
    exponent (an error, as in torch): ``int_exponent`` keeps the number >= 0, ``rpow`` the
    tensor's values."""
    d = draw(dtypes(names))
    s = draw(scalars())
    int_result = np.dtype(d).kind in "iub" and not isinstance(s, float)
    if int_exponent and int_result:
        s = draw(st.integers(0, 9))
    dom = Dom(0, None) if rpow and int_result else ANY
    return Example({"in": draw(arrays(d, shapes(), dom))}, {"scalar": s})


@st.composite
def clip(draw: Any) -> Example:
    d = draw(dtypes())
    lo, hi = draw(st.none() | _number_for(d, False)), draw(st.none() | _number_for(d, False))
    if lo is None and hi is None:
        lo = draw(_number_for(d, False))
    return Example({"in": draw(arrays(d, shapes()))}, {"min": lo, "max": hi})


@st.composite
def fill_like(draw: Any) -> Example:
    d = draw(dtypes())
    return Example({"in": draw(arrays(d, shapes()))}, {"value": draw(_number_for(d))})


@st.composite
def add_n(draw: Any) -> Example:
    shape = draw(shapes())
    return Example({f"in_{i}": draw(arrays(draw(dtypes()), shape))
                    for i in range(draw(st.integers(1, 4)))})


@st.composite
def where(draw: Any, form: str) -> Example:
    """``form``: "tt" two tensors, "ts" a tensor x and a number y, "st" a number x and a
    tensor y (the number is one the tensor's dtype holds: it keeps that dtype)."""
    sc, sx, sy = draw(_pair_shapes(3))
    ins = {"cond": draw(arrays("bool", sc))}
    attrs = {}
    tensor_keys = {"tt": ("x", "y"), "ts": ("x",), "st": ("y",)}[form]
    for k, s in (("x", sx), ("y", sy)):
        if k in tensor_keys:
            ins[k] = draw(arrays(draw(dtypes()), s))
    for k in {"x", "y"} - set(tensor_keys):
        attrs[k] = draw(_number_for(ins[tensor_keys[0]].dtype.name))
    return Example(ins, attrs)


def _number_for(dtype: str, wrap: bool = True) -> S:
    """A Python number for a tensor of ``dtype``: a bool for bool, an int for integers
    (``wrap``: also outside the type's range, which the op converts as a cast does), a
    float for floats."""
    kind = np.dtype(dtype).kind
    if kind == "b":
        return st.booleans()
    if kind in "iu":
        inside = values(dtype).map(int)
        return st.one_of(inside, st.integers(-2 ** 40, 2 ** 40)) if wrap else inside
    return values("float64", ANY if wrap else Dom(nan=False))


@st.composite
def masked_fill(draw: Any) -> Example:
    x_shape = draw(shapes())
    k = draw(st.integers(0, len(x_shape)))
    m_shape = tuple(draw(st.sampled_from([1, s])) for s in x_shape[len(x_shape) - k:])
    d = draw(dtypes())
    return Example({"in": draw(arrays(d, x_shape)), "mask": draw(arrays("bool", m_shape))},
                   {"value": draw(_number_for(d))})


@st.composite
def axes_of(draw: Any, ndim: int, many: bool = True) -> Any:
    """None, one axis (maybe negative) or, when ``many``, a list of distinct axes."""
    n = max(ndim, 1)
    one = st.integers(-n, n - 1)
    forms = [st.none(), one]
    if many and ndim:
        forms.append(st.lists(st.integers(0, ndim - 1), unique=True, min_size=1).map(
            lambda xs: [x - ndim if i % 2 else x for i, x in enumerate(xs)]))
    return draw(st.one_of(*forms))


@st.composite
def reduction(draw: Any, names: tuple[str, ...] = ALL, many: bool = True,
              nonempty: bool = False) -> Example:
    d = draw(dtypes(names))
    shape = draw(shapes(min_side=1 if nonempty else 0))
    return Example({"in": draw(arrays(d, shape))},
                   {"axis": draw(axes_of(len(shape), many)), "keepdims": draw(st.booleans())})


@st.composite
def along_axis(draw: Any, names: tuple[str, ...], dom: Dom = ANY, min_dims: int = 0) -> Example:
    d = draw(dtypes(names))
    shape = draw(shapes(min_dims=min_dims))
    n = max(len(shape), 1)
    return Example({"in": draw(arrays(d, shape, dom))}, {"axis": draw(st.integers(-n, n - 1))})


@st.composite
def matmul(draw: Any, batch: bool) -> Example:
    m, k, n = (draw(st.integers(0, 4)) for _ in range(3))
    ta, tb = draw(st.booleans()), draw(st.booleans())
    ba = bb = ()
    if batch:
        ba, bb = draw(_pair_shapes(2, min_dims=0).filter(lambda p: len(p[0]) + len(p[1]) > 0))
    sa = (*ba, *((k, m) if ta else (m, k)))
    sb = (*bb, *((n, k) if tb else (k, n)))
    return Example({"a": draw(arrays(draw(dtypes()), sa)), "b": draw(arrays(draw(dtypes()), sb))},
                   {"transpose_a": ta, "transpose_b": tb})


@st.composite
def bias_add(draw: Any) -> Example:
    shape = draw(shapes(min_dims=1))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    return Example({"a": draw(arrays(draw(dtypes()), shape)),
                    "b": draw(arrays(draw(dtypes()), (shape[axis],)))}, {"axis": axis})


# -- layout ---------------------------------------------------------------------------------
@st.composite
def reshape(draw: Any) -> Example:
    shape = draw(shapes())
    total = math.prod(shape)
    new: list[int] = []
    rest = total
    for _ in range(draw(st.integers(0, 3))):
        if rest == 0:
            new.append(draw(st.integers(0, 3)))
            continue
        divs = [d for d in range(1, rest + 1) if rest % d == 0]
        new.append(draw(st.sampled_from(divs)))
        rest //= new[-1]
    if rest != 1 or total == 0 or not new:
        new.append(rest if total else 0)
    if total and draw(st.booleans()):
        new[draw(st.integers(0, len(new) - 1))] = -1
    return Example({"in": draw(arrays(draw(dtypes()), shape))}, {"shape": new})


@st.composite
def transpose(draw: Any) -> Example:
    shape = draw(shapes())
    perm = draw(st.none() | st.permutations(list(range(len(shape)))))
    return Example({"in": draw(arrays(draw(dtypes()), shape))}, {"perm": perm})


def cast_domain(src: str, dst: str) -> Dom:
    """The values whose cast numpy defines: a float cast to an integer type lies in it."""
    if np.dtype(src).kind == "f" and np.dtype(dst).kind in "iu":
        ii = np.iinfo(dst)
        margin = max(1.0, float(ii.max) * 2.0 ** -20)  # rounding of the bound itself
        return Dom(float(ii.min) + margin if ii.min else 0.0, float(ii.max) - margin,
                   nan=False, inf=False)
    return ANY


@st.composite
def cast(draw: Any) -> Example:
    src, dst = draw(dtypes()), draw(dtypes())
    return Example({"in": draw(arrays(src, shapes(), cast_domain(src, dst)))}, {"dtype": dst})


@st.composite
def concat(draw: Any) -> Example:
    shape = draw(shapes(min_dims=1))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    ins = {}
    for i in range(draw(st.integers(1, 3))):
        s = list(shape)
        s[axis] = draw(st.integers(0, 3))
        ins[f"in_{i}"] = draw(arrays(draw(dtypes()), tuple(s)))
    return Example(ins, {"axis": axis})


@st.composite
def slice_(draw: Any) -> Example:
    shape = draw(shapes(min_dims=1))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    start = draw(st.integers(0, shape[axis]))
    stop = draw(st.integers(start, shape[axis]))
    return Example({"in": draw(arrays(draw(dtypes()), shape))},
                   {"axis": axis, "start": start, "stop": stop})


@st.composite
def region(draw: Any, shape: tuple[int, ...], steps: bool = True) -> dict[str, list[int]]:
    begin, end, step = [], [], []
    for n in shape:
        b = draw(st.integers(0, n))
        begin.append(b)
        end.append(draw(st.integers(b, n)))
        step.append(draw(st.integers(1, 3)) if steps else 1)
    return {"begin": begin, "end": end, "step": step} if steps else {"begin": begin,
                                                                     "end": end}


@st.composite
def strided_slice(draw: Any, box: bool = False) -> Example:
    shape = draw(shapes())
    return Example({"in": draw(arrays(draw(dtypes()), shape))},
                   draw(region(shape, steps=not box)))


@st.composite
def strided_slice_grad(draw: Any) -> Example:
    shape = draw(shapes())
    r = draw(region(shape))
    dy_shape = tuple(len(range(b, e, s)) for b, e, s in zip(r["begin"], r["end"], r["step"]))
    return Example({"dy": draw(arrays(draw(dtypes()), dy_shape))}, {**r, "shape": list(shape)})


@st.composite
def broadcast_to(draw: Any) -> Example:
    src = draw(shapes())
    lead = draw(st.lists(st.integers(0, 3), max_size=2))
    target = [*lead, *(draw(st.integers(0, 3)) if s == 1 else s for s in src)]
    return Example({"in": draw(arrays(draw(dtypes()), src))}, {"shape": target})


def _index(n: int, shape: Any, negative: bool = True) -> S:
    return arrays(np.dtype(np.int64).name, shape, Dom(-n if negative else 0, n - 1))


@st.composite
def gather(draw: Any) -> Example:
    shape = draw(shapes(min_dims=1, min_side=1))
    idx_dtype = draw(dtypes(INTS))
    n = shape[0]
    lo = 0 if idx_dtype == "uint8" else -n
    idx = draw(arrays(idx_dtype, shapes(max_dims=2), Dom(lo, n - 1)))
    return Example({"in": draw(arrays(draw(dtypes()), shape)), "index": idx})


@st.composite
def gather_grad(draw: Any) -> Example:
    num = draw(st.integers(1, 4))
    idx = draw(arrays(draw(dtypes(("int32", "int64"))), shapes(max_dims=2), Dom(-num, num - 1)))
    rest = draw(shapes(max_dims=2))
    dy = draw(arrays(draw(dtypes(FLOATS)), (*idx.shape, *rest), MODERATE))
    return Example({"dy": dy, "index": idx}, {"num": num})


@st.composite
def one_hot(draw: Any) -> Example:
    n = draw(st.integers(1, 5))
    d = draw(dtypes(INTS))
    return Example({"in": draw(arrays(d, shapes(), Dom(0, n - 1)))}, {"num_classes": n})


@st.composite
def microbatch(draw: Any, place: bool) -> Example:
    num = draw(st.integers(1, 3))
    shape = draw(shapes(max_dims=2))
    if not place:
        shape = (num * draw(st.integers(1, 2)), *shape)
    return Example({"in": draw(arrays(draw(dtypes()), shape))}, {"num": num}, draw(pieces))


@st.composite
def dropout(draw: Any, key: str) -> Example:
    return Example({key: draw(arrays(draw(dtypes(FLOATS)), shapes()))},
                   {"p": draw(st.sampled_from([0.0, 0.1, 0.5, 0.9, 0.999])),
                    "seed": draw(st.integers(0, 2 ** 31 - 1))}, draw(pieces))


@st.composite
def layer_norm(draw: Any, grad: bool) -> Example:
    d = draw(dtypes(FLOATS))
    shape = draw(shapes(min_dims=1, min_side=1))
    attrs = {"normalized_ndim": draw(st.integers(1, len(shape))),
             "eps": draw(st.sampled_from([1e-5, 1e-3, 0.1]))}
    x = draw(arrays(d, shape, MODERATE))
    if not grad:
        return Example({"in": x}, attrs)
    return Example({"dy": draw(arrays(d, shape, MODERATE)), "x": x}, attrs)


@st.composite
def cross_entropy(draw: Any, grad: bool) -> Example:
    d = draw(dtypes(FLOATS))
    n, c = draw(st.integers(0, 4)), draw(st.integers(1, 5))
    ignore = draw(st.sampled_from([-100, 0, -1, 3]))
    logits = draw(arrays(d, (n, c), MODERATE))
    t = draw(st.lists(st.one_of(st.integers(0, c - 1), st.just(ignore)).filter(
        lambda v: v >= 0 or v == ignore), min_size=n, max_size=n))
    target = np.asarray(t, draw(dtypes(("int32", "int64")))).reshape(n)
    ins = {"logits": logits, "target": target}
    if grad:
        ins = {"dy": draw(arrays(d, (n,), MODERATE)), **ins}
    return Example(ins, {"ignore_index": ignore})


@st.composite
def relu_grad(draw: Any) -> Example:
    shape = draw(shapes())
    return Example({"dy": draw(arrays(draw(dtypes()), shape)),
                    "y": draw(arrays(draw(dtypes()), shape))})


@st.composite
def gelu_grad(draw: Any) -> Example:
    shape = draw(shapes())
    d = draw(dtypes(FLOATS))
    return Example({"dy": draw(arrays(d, shape, MODERATE)), "x": draw(arrays(d, shape))},
                   {"approximate": draw(st.sampled_from(["none", "tanh"]))})


# -- generators and state ---------------------------------------------------------------------
_SHAPE_LIST = shapes(max_dims=2).map(list)
NUMBERS_NO_BOOL = (*INTS, *FLOATS)


@st.composite
def constant(draw: Any) -> Example:
    d = draw(dtypes(NUMBERS_NO_BOOL))
    value = draw(_number_for(d) if np.dtype(d).kind != "f" else values(d))
    scale = draw(st.sampled_from([0, 0, 1, 10]))
    if np.dtype(d).kind in "iu":  # value + scale * piece stays in the type's range
        ii = np.iinfo(d)
        value = int(min(max(value, ii.min), ii.max - 100))
    return Example({}, {"shape": draw(_SHAPE_LIST), "value": value, "dtype": d,
                        "piece_scale": scale}, draw(pieces))


@st.composite
def arange(draw: Any) -> Example:
    if draw(st.booleans()):
        start, stop = draw(st.integers(-20, 20)), draw(st.integers(-20, 20))
        step = draw(st.integers(-5, 5).filter(bool))
        return Example({}, {"start": start, "stop": stop, "step": step}, draw(pieces))
    start = draw(st.floats(-10, 10, width=32))
    step = draw(st.sampled_from([0.5, 0.25, -0.75, 3.0]))
    stop = start + step * draw(st.integers(0, 8)) + step / 2
    return Example({}, {"start": start, "stop": stop, "step": step,
                        "dtype": draw(dtypes(("float32", "float64")))}, draw(pieces))


@st.composite
def random_normal(draw: Any) -> Example:
    return Example({}, {"shape": draw(_SHAPE_LIST), "seed": draw(st.integers(0, 2 ** 31 - 1)),
                        "mean": draw(st.floats(-5, 5)), "std": draw(st.floats(0, 3)),
                        "dtype": draw(dtypes(FLOATS))}, draw(pieces))


@st.composite
def variable(draw: Any, part: bool, whole: bool = False) -> Example:
    shape = draw(shapes(max_dims=2))
    d = draw(dtypes(FLOATS))
    init = draw(st.sampled_from(["zeros", "constant", "normal", "uniform"]))
    attrs: dict[str, Any] = {"dtype": d, "init": init, "seed": draw(st.integers(0, 99)),
                             "std": 0.5, "value": 1.5, "low": -1.0, "high": 2.0}
    if not part:
        return Example({}, {**attrs, "shape": list(shape)})
    box = {"begin": [0] * len(shape), "end": list(shape)} if whole else draw(
        region(shape, False))
    return Example({}, {**attrs, "logical_shape": list(shape), **box})


@st.composite
def const_array(draw: Any) -> Example:
    d = draw(dtypes())
    a = draw(arrays(d, shapes(max_dims=2), MODERATE if d in FLOATS else ANY))
    return Example({}, {"shape": list(a.shape), "dtype": d, "value": a.ravel().tolist()})


SCHEDULES = st.one_of(
    st.builds(lambda lr: {"kind": "constant", "base_lr": lr}, st.floats(0, 1)),
    st.builds(lambda lr, n, g: {"kind": "step", "base_lr": lr, "step_size": n, "gamma": g},
              st.floats(0, 1), st.integers(1, 5), st.floats(0.1, 1)),
    st.builds(lambda lr, n, lo: {"kind": "cosine", "base_lr": lr, "T_max": n, "eta_min": lo},
              st.floats(0, 1), st.integers(1, 20), st.floats(0, 0.01)),
    st.builds(lambda lr, ms, g: {"kind": "multistep", "base_lr": lr, "milestones": sorted(ms),
                                 "gamma": g},
              st.floats(0, 1), st.lists(st.integers(0, 30), max_size=4), st.floats(0.1, 1)),
    st.builds(lambda lr, g: {"kind": "exponential", "base_lr": lr, "gamma": g},
              st.floats(0, 1), st.floats(0.5, 1)),
    st.builds(lambda lr, n, a: {"kind": "cosine_decay", "base_lr": lr, "decay_steps": n,
                                "alpha": a},
              st.floats(0, 1), st.integers(1, 20), st.floats(0, 1)),
    st.builds(lambda lr, a, b, n: {"kind": "linear", "base_lr": lr, "start_factor": a,
                                   "end_factor": b, "total_iters": n},
              st.floats(0, 1), st.floats(0, 1), st.floats(0, 1), st.integers(1, 10)),
    st.builds(lambda lr, f, n: {"kind": "constant_factor", "base_lr": lr, "factor": f,
                                "total_iters": n},
              st.floats(0, 1), st.floats(0, 1), st.integers(0, 10)),
    st.builds(lambda lr, n, e, p, c: {"kind": "polynomial", "base_lr": lr, "decay_batch": n,
                                      "end_learning_rate": e, "power": p, "cycle": c},
              st.floats(0, 1), st.integers(1, 10), st.floats(0, 0.01), st.floats(0.5, 3),
              st.booleans()),
)


@st.composite
def learning_rate(draw: Any) -> Example:
    spec = draw(SCHEDULES)
    if draw(st.booleans()):
        spec = {"kind": "warmup", "warmup_factor": draw(st.floats(0, 1)),
                "warmup_iters": draw(st.integers(1, 6)),
                "method": draw(st.sampled_from(["linear", "constant"])),
                "prefix": draw(st.booleans()), "after": spec}
    step = np.asarray([draw(st.integers(0, 40))], draw(dtypes(("int32", "int64"))))
    return Example({"step": step}, {"spec": spec})


@st.composite
def assign(draw: Any) -> Example:
    shape = draw(shapes(max_dims=2))
    d = draw(dtypes(FLOATS))
    part = {"logical_shape": list(shape), "begin": [0] * len(shape), "end": list(shape),
            "init": "zeros", "dtype": d}
    return Example({"ref": np.zeros(shape, d), "value": draw(arrays(d, shape))},
                   {"variable": part})


@st.composite
def stamp(draw: Any) -> Example:
    return Example({}, {"shape": draw(shapes(min_dims=1, min_side=1, max_dims=2).map(list)),
                        "dtype": draw(dtypes(("int32", "int64", "float32")))}, draw(pieces))


@st.composite
def passthrough(draw: Any, attrs: dict[str, Any]) -> Example:
    return Example({"in": draw(arrays(draw(dtypes()), shapes()))}, dict(attrs))
