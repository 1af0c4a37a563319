"""Oracle records of the element-wise ops: unary math, binary and scalar arithmetic,
comparisons and logic, where / masked_fill / clip, and the activations.  References are
the stable textbook forms in float64 (``sigmoid`` never exponentiates a large positive,
``softplus`` is ``max(x, 0) + log1p(e^-|x|)``), or numpy exactly in the output dtype for
integer and bool results (wrap-around included: a GPU wraps too)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tests.kernels.oracle_base import (
    ALL,
    FLOATS,
    INTS,
    NUMERIC,
    Oracle,
    array,
    elements,
    f64,
    shapes,
)


def E() -> Any:
    return np.errstate(all="ignore")


def _exact_or_f64(fn: Any) -> Any:
    """A reference computed in float64 for float results (from the operands as they are:
    rounded once, at the end), in the output dtype otherwise (operands taken into it)."""
    def ref(ins: dict, attrs: dict, dtypes: dict) -> dict:
        out = np.dtype(dtypes["out"])
        with E():
            if out.kind == "f":
                return {"out": fn(*[f64(v) for v in ins.values()], attrs)}
            return {"out": np.asarray(fn(*[np.asarray(v).astype(out) for v in ins.values()],
                                         attrs)).astype(out)}
    return ref


def unary(fn: Any, dtypes: tuple[str, ...] = NUMERIC, bound: float | None = None,
          attrs: Any = None, **kw: Any) -> Oracle:
    def draw(data: st.DataObject) -> tuple[dict, dict]:
        dt = data.draw(st.sampled_from(dtypes))
        x = array(data, dt, data.draw(shapes()), bound=bound)
        return {"in": x}, (data.draw(attrs) if attrs is not None else {})
    return Oracle(draw, _exact_or_f64(fn), **kw)


def binary(fn: Any, dtypes: tuple[str, ...] = NUMERIC, bound: float | None = None,
           b_elements: Any = None) -> Oracle:
    def draw(data: st.DataObject) -> tuple[dict, dict]:
        da, db = data.draw(st.sampled_from(dtypes)), data.draw(st.sampled_from(dtypes))
        sa, sb = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3,
                                                             max_side=3)).input_shapes
        a = array(data, da, sa, bound=bound)
        b = array(data, db, sb, bound=bound) if b_elements is None else np.asarray(
            data.draw(hnp.arrays(np.dtype(db), sb, elements=b_elements(db))), db)
        return {"a": a, "b": b}, {}
    return Oracle(draw, _exact_or_f64(lambda a, b, _: fn(a, b)))


def scalar(fn: Any, reverse: bool = False, dtypes: tuple[str, ...] = NUMERIC,
           numbers: Any = None, bound: float | None = None) -> Oracle:
    if numbers is None:
        numbers = st.one_of(st.integers(-5, 5), st.floats(-1e3, 1e3), st.booleans())

    def draw(data: st.DataObject) -> tuple[dict, dict]:
        dt = data.draw(st.sampled_from(dtypes))
        s = data.draw(numbers)
        if dt == "uint8" and not isinstance(s, float):  # numpy refuses -1 for uint8
            s = abs(s)
        return {"in": array(data, dt, data.draw(shapes()), bound=bound)}, {"scalar": s}

    def ref(ins: dict, attrs: dict, dtypes: dict) -> dict:
        """The number is taken in the dtype the operation runs in: the tensor's, as numpy
        (NEP 50) and OneFlow do (a float16 tensor sees 8.5e-163 as 0; an int8 one divides
        in float64), or the result's if that is wider; then computed exactly."""
        out, s = np.dtype(dtypes["out"]), attrs["scalar"]
        x = ins["in"]
        with E():
            if out.kind == "f":
                loop = np.result_type(x, s)
                if loop.kind != "f":
                    loop = np.promote_types(loop, np.float16)
                if out.itemsize > loop.itemsize:
                    loop = out
                x, s = f64(x), float(np.asarray(s).astype(loop))
            else:
                x = x.astype(out)
            r = fn(s, x) if reverse else fn(x, s)
            return {"out": np.asarray(r).astype(out)}
    return Oracle(draw, ref)


def compare(fn: Any, dtypes: tuple[str, ...] = ALL) -> Oracle:
    """Comparisons and logic: bool results, computed by numpy on the inputs as they are."""
    def draw(data: st.DataObject) -> tuple[dict, dict]:
        dt = data.draw(st.sampled_from(dtypes))
        sa, sb = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3,
                                                             max_side=3)).input_shapes
        a = array(data, dt, sa)
        b = array(data, data.draw(st.sampled_from(dtypes)), sb)
        if data.draw(st.booleans()) and a.shape == b.shape:
            b = a.copy().astype(b.dtype)  # equal values, so eq/le/ge meet their edge
        return {"a": a, "b": b}, {}
    return Oracle(draw, lambda ins, attrs, dt: {"out": fn(ins["a"], ins["b"])})


def scalar_compare(fn: Any) -> Oracle:
    def draw(data: st.DataObject) -> tuple[dict, dict]:
        dt = data.draw(st.sampled_from(ALL))
        x = array(data, dt, data.draw(shapes()))
        s = data.draw(st.one_of(st.integers(-3, 3), st.floats(allow_nan=True), st.booleans()))
        return {"in": x}, {"scalar": s}
    return Oracle(draw, lambda ins, attrs, dt: {"out": fn(ins["in"], attrs["scalar"])})


# -- references -----------------------------------------------------------------------------
def _sigmoid(x: np.ndarray) -> np.ndarray:
    with E():
        e = np.exp(-np.abs(x))
        return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _phi(x: np.ndarray) -> np.ndarray:
    """The normal CDF from erfc (no 1 + erf cancelling in the left tail)."""
    if not x.size:
        return x.copy()
    return np.vectorize(lambda v: 0.5 * math.erfc(-v / math.sqrt(2.0)), otypes=[np.float64])(x)


def _gelu(x: np.ndarray, a: dict) -> np.ndarray:
    if a.get("approximate", "none") == "tanh":  # 0.5 (1 + tanh u) = sigmoid(2u)
        return x * _sigmoid(2.0 * math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))
    return x * _phi(x)


def _gelu_d(x: np.ndarray, a: dict) -> np.ndarray:
    with E():
        if a.get("approximate", "none") == "tanh":
            c = math.sqrt(2 / math.pi)
            u2 = 2.0 * c * (x + 0.044715 * x ** 3)
            s, not_s = _sigmoid(u2), _sigmoid(-u2)
            return s + 2.0 * x * s * not_s * c * (1 + 3 * 0.044715 * x * x)
        return _phi(x) + x * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


def _softplus(x: np.ndarray, a: dict) -> np.ndarray:
    beta, threshold = float(a.get("beta", 1.0)), float(a.get("threshold", 20.0))
    bx = x * beta
    soft = (np.maximum(bx, 0) + np.log1p(np.exp(-np.abs(bx)))) / beta
    return np.where(bx > threshold, x, soft)


def _clip(x: np.ndarray, a: dict) -> np.ndarray:
    """Bounds taken in the tensor's dtype (an int64 near 2**53 is not rounded by a float
    bound)."""
    for key, fn in (("min", np.maximum), ("max", np.minimum)):
        if a.get(key) is not None:
            x = fn(x, np.asarray(a[key]).astype(x.dtype))
    return x


def _clip_draw(data: st.DataObject) -> tuple[dict, dict]:
    dt = data.draw(st.sampled_from(NUMERIC))
    a = data.draw(_clip_attrs())
    if a.pop("signed") and dt != "uint8":
        a = {k: (-v if v is not None else None) for k, v in a.items()}
        a["min"], a["max"] = a["max"], a["min"]  # keep min <= max when both are given
    return {"in": array(data, dt, data.draw(shapes()))}, a


def _pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.power(a, b)


def _exponents(dtype: str) -> Any:
    """Exponents numpy defines for ``dtype`` (integers: no negative powers)."""
    return elements(dtype, bound=8) if np.dtype(dtype).kind == "f" else (
        st.booleans() if dtype == "bool" else st.integers(0, 6))


def _gelu_attrs() -> st.SearchStrategy:
    return st.fixed_dictionaries({}, optional={"approximate": st.sampled_from(["none", "tanh"])})


def _softplus_attrs() -> st.SearchStrategy:
    return st.fixed_dictionaries({}, optional={"beta": st.sampled_from([0.5, 1.0, 3.0]),
                                               "threshold": st.sampled_from([5.0, 20.0])})


def _clip_attrs() -> st.SearchStrategy:
    """Bounds the dtype holds (below 0 only for signed dtypes: float -1 -> uint8 is not
    defined), drawn with the input's dtype in ``_clip_draw``."""
    lo = st.one_of(st.none(), st.floats(0, 10))
    return st.tuples(lo, lo, st.booleans()).filter(lambda t: t[:2] != (None, None)).map(
        lambda t: {"min": t[0], "max": t[1], "signed": t[2]})


def _draw_grad(kind: str) -> Any:
    def draw(data: st.DataObject) -> tuple[dict, dict]:
        dt = data.draw(st.sampled_from(FLOATS))
        shape = data.draw(shapes())
        dy = array(data, dt, shape, bound=1e3)
        other = array(data, dt, shape, bound=1e3 if kind == "relu" else 20)
        attrs = data.draw(_gelu_attrs()) if kind == "gelu" else {}
        return {"dy": dy, ("y" if kind == "relu" else "x"): other}, attrs
    return draw


def _where_draw(variant: str) -> Any:
    def draw(data: st.DataObject) -> tuple[dict, dict]:
        shp = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3,
                                                          max_side=3)).input_shapes
        ins = {"cond": array(data, "bool", shp[0])}
        attrs: dict[str, Any] = {}
        for k, s in (("x", shp[1]), ("y", shp[2])):
            if variant == f"scalar_{k}":
                attrs[k] = data.draw(st.floats(-1e3, 1e3))
            else:
                ins[k] = array(data, data.draw(st.sampled_from(NUMERIC)), s)
        return ins, attrs
    return draw


def _where_ref(ins: dict, attrs: dict, dtypes: dict) -> dict:
    out = np.dtype(dtypes["out"])
    x = ins["x"] if "x" in ins else attrs["x"]
    y = ins["y"] if "y" in ins else attrs["y"]
    with E():
        return {"out": np.where(ins["cond"], np.asarray(x).astype(out),
                                np.asarray(y).astype(out))}


def _masked_fill_draw(data: st.DataObject) -> tuple[dict, dict]:
    dt = data.draw(st.sampled_from(NUMERIC))
    shape = data.draw(shapes(min_dims=1))
    cut = data.draw(st.integers(0, len(shape)))
    mask_shape = tuple(data.draw(st.sampled_from([1, n])) for n in shape[cut:])
    value = data.draw(st.one_of(st.integers(-3, 3), st.floats(-1e3, 1e3), st.booleans()))
    return ({"in": array(data, dt, shape), "mask": array(data, "bool", mask_shape)},
            {"value": value})


def _masked_fill_ref(ins: dict, attrs: dict, dtypes: dict) -> dict:
    out = np.dtype(dtypes["out"])
    with E():
        return {"out": np.where(ins["mask"], np.asarray(attrs["value"]).astype(out),
                                ins["in"].astype(out))}


ORACLES: dict[str, Oracle] = {
    "identity": unary(lambda x, a: x, ALL),
    "relu": unary(lambda x, a: np.maximum(x, 0)),
    "neg": unary(lambda x, a: -x, (*FLOATS, "int8", "int32", "int64")),
    "abs": unary(lambda x, a: np.abs(x), (*FLOATS, "int8", "int32", "int64")),
    "sign": unary(lambda x, a: np.sign(x), NUMERIC),
    "exp": unary(lambda x, a: np.exp(x), NUMERIC, bound=1e3),
    "tanh": unary(lambda x, a: np.tanh(x), NUMERIC),
    "log": unary(lambda x, a: np.log(x), NUMERIC),
    "sqrt": unary(lambda x, a: np.sqrt(x), NUMERIC),
    "rsqrt": unary(lambda x, a: 1.0 / np.sqrt(x), NUMERIC),
    "sigmoid": unary(lambda x, a: _sigmoid(x), NUMERIC),
    # gelu's kernel uses a Chebyshev fit of erfc (~1e-7 relative): float64 holds it to that
    "gelu": unary(_gelu, NUMERIC, attrs=_gelu_attrs(), rtol={"float64": (2e-7, 1e-9)}),
    "silu": unary(lambda x, a: x * _sigmoid(x), NUMERIC),
    "softplus": unary(_softplus, NUMERIC, attrs=_softplus_attrs()),
    "clip": Oracle(lambda data: _clip_draw(data), _exact_or_f64(_clip)),
    "logical_not": unary(lambda x, a: np.logical_not(x), ALL),
    # values the dtype holds (numpy refuses to fill uint8 with -1)
    "fill_like": unary(lambda x, a: np.full(x.shape, a["value"]), ALL, attrs=st.fixed_dictionaries(
        {"value": st.one_of(st.integers(0, 1), st.floats(0, 100).map(round))})),
    "add": binary(np.add),
    "sub": binary(np.subtract),
    "mul": binary(np.multiply),
    "div": binary(np.true_divide),
    "pow": binary(_pow, bound=50, b_elements=_exponents),
    "maximum": binary(np.maximum),
    "minimum": binary(np.minimum),
    "scalar_add": scalar(np.add),
    "scalar_sub": scalar(np.subtract),
    "scalar_rsub": scalar(np.subtract, reverse=True),
    "scalar_mul": scalar(np.multiply),
    "scalar_div": scalar(np.true_divide),
    "scalar_rdiv": scalar(np.true_divide, reverse=True),
    "scalar_pow": scalar(np.power, numbers=st.one_of(st.integers(0, 4), st.floats(-3, 3)),
                         bound=50),
    "scalar_rpow": scalar(np.power, reverse=True, dtypes=(*FLOATS,),
                          numbers=st.floats(0.5, 3), bound=50),
    "relu_grad": Oracle(_draw_grad("relu"), lambda i, a, d: {"out": np.where(i["y"] > 0, f64(
        i["dy"]), f64(i["dy"]) * 0.0)}),
    # the same erfc fit as gelu; the derivative is held in the kernel's working precision
    # (float32 for float16 and float32: gelu'(-15) ~ -7e-49 is 0 there, so inf * it is NaN)
    "gelu_grad": Oracle(_draw_grad("gelu"), lambda i, a, d: {
        "out": f64(i["dy"]) * f64(_gelu_d(f64(i["x"]), a).astype(
            np.float64 if d["out"] == "float64" else np.float32))},
        rtol={"float64": (2e-7, 1e-9)}),
    "where": Oracle(_where_draw(""), _where_ref),
    "where_scalar_x": Oracle(_where_draw("scalar_x"), _where_ref),
    "where_scalar_y": Oracle(_where_draw("scalar_y"), _where_ref),
    "masked_fill": Oracle(_masked_fill_draw, _masked_fill_ref),
}

for _name, _fn in (("eq", np.equal), ("ne", np.not_equal), ("lt", np.less),
                   ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal),
                   ("logical_and", np.logical_and), ("logical_or", np.logical_or),
                   ("logical_xor", np.logical_xor)):
    ORACLES[_name] = compare(_fn)
    ORACLES[f"scalar_{_name}"] = scalar_compare(_fn)

__all__ = ["INTS", "ORACLES"]
