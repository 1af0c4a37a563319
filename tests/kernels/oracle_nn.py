"""Oracle records of the ops with axes and layouts: softmax / log_softmax (max subtracted,
in float64), bias_add on every axis, matmul / batch_matmul with every transpose,
reductions over every axis set with and without keepdims, layer_norm, cross_entropy,
and the layout ops (reshape, transpose, cast, concat, slice, strided_slice, broadcast_to,
gather, one_hot, add_n), plus the fused gradient kernels of these."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from tests.kernels.oracle_base import ALL, FLOATS, INTS, NUMERIC, Oracle, array, f64, shapes


def E() -> Any:
    return np.errstate(all="ignore")


def _axis(data: st.DataObject, ndim: int) -> int:
    """An axis of a tensor of rank ``ndim``, negative or not."""
    return data.draw(st.integers(-max(ndim, 1), max(ndim, 1) - 1))


def _axes(data: st.DataObject, ndim: int) -> Any:
    """None, one axis, or a list of distinct axes (negative ones too)."""
    if ndim == 0:
        return data.draw(st.sampled_from([None, 0, [0], -1]))
    one = st.integers(-ndim, ndim - 1)
    many = st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim).map(
        lambda xs: [x - ndim if i % 2 else x for i, x in enumerate(xs)])
    return data.draw(st.one_of(st.none(), one, many))


def _np_axes(axis: Any) -> Any:
    return tuple(axis) if isinstance(axis, list) else axis


def _out(dtypes: dict) -> np.dtype:
    return np.dtype(dtypes["out"])


# -- softmax, log_softmax (the issue's [1000, 0]: max subtracted first) ----------------------
def _softmax_draw(data: st.DataObject) -> tuple[dict, dict]:
    dt = data.draw(st.sampled_from(NUMERIC))
    shape = data.draw(shapes(min_dims=1))
    x = array(data, dt, shape, bound=1e3)
    return {"in": x}, ({"axis": _axis(data, len(shape))} if data.draw(st.booleans()) else {})


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    if x.size == 0:
        return x.copy()
    with E():
        z = x - x.max(axis=axis, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=axis, keepdims=True)


def _log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    if x.size == 0:
        return x.copy()
    with E():
        z = x - x.max(axis=axis, keepdims=True)
        return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


# -- bias_add -------------------------------------------------------------------------------
def _bias_draw(data: st.DataObject) -> tuple[dict, dict]:
    dt, db = data.draw(st.sampled_from(NUMERIC)), data.draw(st.sampled_from(NUMERIC))
    shape = data.draw(shapes(min_dims=1))
    axis = _axis(data, len(shape))
    attrs = {"axis": axis} if axis != -1 or data.draw(st.booleans()) else {}
    return {"a": array(data, dt, shape), "b": array(data, db, (shape[axis],))}, attrs


def _bias_ref(ins: dict, attrs: dict, dtypes: dict) -> dict:
    x, b, out = ins["a"], ins["b"], _out(dtypes)
    axis = int(attrs.get("axis", -1)) % x.ndim
    shape = [1] * x.ndim
    shape[axis] = b.shape[0]
    with E():
        if out.kind == "f":
            return {"out": f64(x) + f64(b).reshape(shape)}
        return {"out": x.astype(out) + b.astype(out).reshape(shape)}


# -- matmul, batch_matmul -------------------------------------------------------------------
def _mm_draw(batched: bool) -> Any:
    def draw(data: st.DataObject) -> tuple[dict, dict]:
        da, db = data.draw(st.sampled_from(NUMERIC)), data.draw(st.sampled_from(NUMERIC))
        m, k, n = (data.draw(st.integers(0, 4)) for _ in range(3))
        ta, tb = data.draw(st.booleans()), data.draw(st.booleans())
        batch_a = batch_b = ()
        if batched:
            batch_a = tuple(data.draw(st.lists(st.integers(1, 3), max_size=2)))
            batch_b = tuple(1 if data.draw(st.booleans()) else s for s in batch_a)[
                data.draw(st.integers(0, len(batch_a))):]
        sa = (*batch_a, *((k, m) if ta else (m, k)))
        sb = (*batch_b, *((n, k) if tb else (k, n)))
        bound = 1e3  # finite: BLAS may order inf * 0 differently than a float64 sum
        a = array(data, da, sa, bound=bound, special=False)
        b = array(data, db, sb, bound=bound, special=False)
        return {"a": a, "b": b}, {"transpose_a": ta, "transpose_b": tb}
    return draw


def _mm_ref(ins: dict, attrs: dict, dtypes: dict) -> dict:
    out = _out(dtypes)
    a, b = ins["a"], ins["b"]
    if attrs.get("transpose_a"):
        a = a.swapaxes(-1, -2)
    if attrs.get("transpose_b"):
        b = b.swapaxes(-1, -2)
    with E():
        if out.kind == "f":
            return {"out": np.matmul(f64(a), f64(b))}
        return {"out": np.matmul(a.astype(out), b.astype(out))}


# -- reductions -----------------------------------------------------------------------------
def _reduce_draw(dtypes: tuple[str, ...], nonempty: bool = False) -> Any:
    """Finite values small enough that no partial sum of up to 64 of them overflows the
    dtype (+-inf and NaN stay among the edges)."""
    def draw(data: st.DataObject) -> tuple[dict, dict]:
        dt = data.draw(st.sampled_from(dtypes))
        bound = float(np.finfo(dt).max) / 256 if np.dtype(dt).kind == "f" else None
        x = array(data, dt, data.draw(shapes(min_side=1 if nonempty else 0)), bound=bound)
        attrs: dict[str, Any] = {"axis": _axes(data, x.ndim)}
        if data.draw(st.booleans()):
            attrs["keepdims"] = data.draw(st.booleans())
        return {"in": x}, attrs
    return draw


def _reduce_ref(fn: Any, exact_ints: bool = True) -> Any:
    def ref(ins: dict, attrs: dict, dtypes: dict) -> dict:
        x, out = ins["in"], _out(dtypes)
        axis, keep = _np_axes(attrs.get("axis")), bool(attrs.get("keepdims", False))
        axis = None if x.ndim == 0 else axis  # a 0-d tensor's axis 0 / -1: all of it
        with E():
            if out.kind == "f" or not exact_ints:
                return {"out": fn(f64(x), axis=axis, keepdims=keep)}
            return {"out": fn(x.astype(out), axis=axis, keepdims=keep)}
    return ref


def _arg_draw(data: st.DataObject) -> tuple[dict, dict]:
    dt = data.draw(st.sampled_from(NUMERIC))
    x = array(data, dt, data.draw(shapes(min_side=1)))
    attrs: dict[str, Any] = {}
    if x.ndim and data.draw(st.booleans()):
        attrs["axis"] = _axis(data, x.ndim)
    if data.draw(st.booleans()):
        attrs["keepdims"] = data.draw(st.booleans())
    return {"in": x}, attrs


def _arg_ref(fn: Any) -> Any:
    def ref(ins: dict, attrs: dict, dtypes: dict) -> dict:
        x = ins["in"]
        axis = attrs.get("axis")
        r = fn(x, axis=axis, keepdims=bool(attrs.get("keepdims", False)))
        return {"out": np.asarray(r)}
    return ref


# -- layer_norm, cross_entropy ----------------------------------------------------------------
def _ln_draw(data: st.DataObject) -> tuple[dict, dict]:
    dt = data.draw(st.sampled_from(FLOATS))
    x = array(data, dt, data.draw(shapes(min_dims=1, min_side=1)), bound=1e3)
    attrs: dict[str, Any] = {}
    if data.draw(st.booleans()):
        attrs["normalized_ndim"] = data.draw(st.integers(1, x.ndim))
    if data.draw(st.booleans()):
        attrs["eps"] = data.draw(st.sampled_from([1e-5, 1e-3, 0.1]))
    return {"in": x}, attrs


def _ln_stats(x: np.ndarray, attrs: dict) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    k = int(attrs.get("normalized_ndim", 1))
    axes = tuple(range(x.ndim - k, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    return mean, 1.0 / np.sqrt(var + float(attrs.get("eps", 1e-5))), axes


def _ln_ref(ins: dict, attrs: dict, dtypes: dict) -> dict:
    x = f64(ins["in"])
    with E():
        mean, rstd, _ = _ln_stats(x, attrs)
        return {"out": (x - mean) * rstd}


def _ln_grad_draw(data: st.DataObject) -> tuple[dict, dict]:
    ins, attrs = _ln_draw(data)
    x = ins["in"]
    return {"dy": array(data, str(x.dtype), x.shape, bound=1e3), "x": x}, attrs


def _ln_grad_ref(ins: dict, attrs: dict, dtypes: dict) -> dict:
    x, dy = f64(ins["x"]), f64(ins["dy"])
    with E():
        mean, rstd, axes = _ln_stats(x, attrs)
        xhat = (x - mean) * rstd
        return {"out": rstd * (dy - dy.mean(axis=axes, keepdims=True)
                               - xhat * (dy * xhat).mean(axis=axes, keepdims=True))}


def _ln_grad_scale(ins: dict, attrs: dict) -> np.ndarray:
    """The gradient is rstd * (dy - mean(dy) - xhat * mean(dy * xhat)): the difference of
    terms this large, which float32 holds to its ulps only."""
    x, dy = f64(ins["x"]), f64(ins["dy"])
    with E():
        mean, rstd, axes = _ln_stats(x, attrs)
        xhat = (x - mean) * rstd
        return rstd * (np.abs(dy) + np.abs(dy).mean(axis=axes, keepdims=True)
                       + np.abs(xhat) * np.abs(dy * xhat).mean(axis=axes, keepdims=True))


def _ce_draw(grad: bool) -> Any:
    def draw(data: st.DataObject) -> tuple[dict, dict]:
        dt = data.draw(st.sampled_from(FLOATS))
        n, c = data.draw(st.integers(0, 4)), data.draw(st.integers(1, 5))
        x = array(data, dt, (n, c), bound=1e3)
        ignore = data.draw(st.sampled_from([-100, 0, 2]))
        t = np.asarray(data.draw(st.lists(st.sampled_from([*range(c), ignore]), min_size=n,
                                          max_size=n)), dtype=data.draw(st.sampled_from(
                                              ["int64", "int32"])))
        attrs = {"ignore_index": ignore} if ignore != -100 else {}
        ins = {"logits": x, "target": t}
        if grad:
            ins = {"dy": array(data, dt, (n,), bound=1e3), **ins}
        return ins, attrs
    return draw


def _ce_ref(ins: dict, attrs: dict, dtypes: dict) -> dict:
    x, t = f64(ins["logits"]), ins["target"]
    ignore = int(attrs.get("ignore_index", -100))
    valid = t != ignore
    with E():
        lsm = _log_softmax(x, 1)
        picked = np.take_along_axis(lsm, np.where(valid, t, 0).reshape(-1, 1).astype(np.int64),
                                    axis=1)[:, 0] if x.size else np.zeros(x.shape[0])
        return {"out": -picked * valid}


def _ce_grad_ref(ins: dict, attrs: dict, dtypes: dict) -> dict:
    x, t, dy = f64(ins["logits"]), ins["target"], f64(ins["dy"])
    ignore = int(attrs.get("ignore_index", -100))
    valid = t != ignore
    work = np.float64 if dtypes["out"] == "float64" else np.float32
    with E():
        # the probabilities as the kernel's working precision holds them (e^-104 is 0 in
        # float32, so inf * it is NaN there)
        p = f64(_softmax(x, 1).astype(work))
        hot = np.arange(x.shape[1]).reshape(1, -1) == np.where(valid, t, 0).reshape(-1, 1)
        return {"out": (p - hot) * (dy * valid).reshape(-1, 1)}


# -- layout ops ---------------------------------------------------------------------------
def _layout(draw_attrs: Any, fn: Any, dtypes: tuple[str, ...] = ALL, min_dims: int = 0) -> Oracle:
    def draw(data: st.DataObject) -> tuple[dict, dict]:
        x = array(data, data.draw(st.sampled_from(dtypes)), data.draw(shapes(min_dims=min_dims)))
        return {"in": x}, draw_attrs(data, x.shape)

    def ref(ins: dict, attrs: dict, dtypes: dict) -> dict:
        return {"out": np.asarray(fn(ins["in"], attrs)).astype(_out(dtypes))}
    return Oracle(draw, ref)


def _reshape_attrs(data: st.DataObject, shape: tuple[int, ...]) -> dict:
    n = int(np.prod(shape))
    dims = [d for d in range(1, n + 1) if n % d == 0] or [0]
    first = data.draw(st.sampled_from(dims)) if n else 0
    rest = n // first if first else data.draw(st.integers(0, 3))
    new = data.draw(st.sampled_from([[first, rest], [-1, first] if first else [first, rest],
                                     [n] if n else [0, 2], [first, -1] if first else [0, rest]]))
    return {"shape": new}


def _perm_attrs(data: st.DataObject, shape: tuple[int, ...]) -> dict:
    if data.draw(st.booleans()):
        return {}
    return {"perm": data.draw(st.permutations(range(len(shape))))}


def _cast_draw(data: st.DataObject) -> tuple[dict, dict]:
    src = data.draw(st.sampled_from(ALL))
    dst = data.draw(st.sampled_from(ALL))
    kind = np.dtype(dst).kind
    if np.dtype(src).kind == "f" and kind in "iub":  # numpy leaves NaN, inf, out of range
        lo, hi = (0, 1) if kind == "b" else (np.iinfo(dst).min, np.iinfo(dst).max)
        x = array(data, src, data.draw(shapes()), bound=min(float(hi), 6e4), special=False)
        x = np.clip(x, lo, hi).astype(src)
    else:
        x = array(data, src, data.draw(shapes()))
    return {"in": x}, {"dtype": dst}


def _concat_draw(data: st.DataObject) -> tuple[dict, dict]:
    shape = list(data.draw(shapes(min_dims=1)))
    axis = _axis(data, len(shape))
    k = data.draw(st.integers(1, 3))
    ins = {}
    for i in range(k):
        shape[axis] = data.draw(st.integers(0, 3))
        ins[f"in_{i}"] = array(data, data.draw(st.sampled_from(NUMERIC)), tuple(shape))
    return ins, ({"axis": axis} if axis != 0 or data.draw(st.booleans()) else {})


def _concat_ref(ins: dict, attrs: dict, dtypes: dict) -> dict:
    out = _out(dtypes)
    parts = [ins[k].astype(out) for k in sorted(ins, key=lambda k: int(k[3:]))]
    return {"out": np.concatenate(parts, axis=int(attrs.get("axis", 0)))}


def _slice_attrs(data: st.DataObject, shape: tuple[int, ...]) -> dict:
    axis = _axis(data, len(shape))
    n = shape[axis]
    start = data.draw(st.integers(0, n))
    return {"axis": axis, "start": start, "stop": data.draw(st.integers(start, n))}


def _slice(x: np.ndarray, a: dict) -> np.ndarray:
    idx = [slice(None)] * x.ndim
    idx[int(a["axis"])] = slice(int(a["start"]), int(a["stop"]))
    return x[tuple(idx)]


def _strided_attrs(data: st.DataObject, shape: tuple[int, ...]) -> dict:
    begin, end, step = [], [], []
    for n in shape:
        b = data.draw(st.integers(0, n))
        begin.append(b)
        end.append(data.draw(st.integers(b, n)))
        step.append(data.draw(st.integers(1, 3)))
    return {"begin": begin, "end": end, "step": step}


def _strided(x: np.ndarray, a: dict) -> np.ndarray:
    return x[tuple(slice(b, e, s) for b, e, s in zip(a["begin"], a["end"], a["step"]))]


def _ssg_draw(data: st.DataObject) -> tuple[dict, dict]:
    shape = data.draw(shapes())
    attrs = {**_strided_attrs(data, shape), "shape": list(shape)}
    dt = data.draw(st.sampled_from(NUMERIC))
    want = _strided(np.empty(shape), attrs).shape
    return {"dy": array(data, dt, want)}, attrs


def _ssg_ref(ins: dict, attrs: dict, dtypes: dict) -> dict:
    out = np.zeros(tuple(attrs["shape"]), _out(dtypes))
    out[tuple(slice(b, e, s) for b, e, s in zip(attrs["begin"], attrs["end"], attrs["step"]))] = \
        ins["dy"]
    return {"out": out}


def _broadcast_attrs(data: st.DataObject, shape: tuple[int, ...]) -> dict:
    lead = data.draw(st.lists(st.integers(0, 3), max_size=2))
    grown = [data.draw(st.sampled_from([1, 2, 3])) if n == 1 else n for n in shape]
    return {"shape": [*lead, *grown]}


def _gather_draw(data: st.DataObject) -> tuple[dict, dict]:
    x = array(data, data.draw(st.sampled_from(ALL)), data.draw(shapes(min_dims=1, min_side=1)))
    n = x.shape[0]
    idx_shape = data.draw(shapes(max_dims=2))
    idx = np.asarray(data.draw(st.lists(st.integers(-n, n - 1), min_size=int(np.prod(idx_shape)),
                                        max_size=int(np.prod(idx_shape)))),
                     dtype=data.draw(st.sampled_from(["int64", "int32"]))).reshape(idx_shape)
    return {"in": x, "index": idx}, {}


def _gather_grad_draw(data: st.DataObject) -> tuple[dict, dict]:
    num = data.draw(st.integers(1, 4))
    idx_shape = data.draw(shapes(max_dims=2))
    idx = np.asarray(data.draw(st.lists(st.integers(-num, num - 1),
                                        min_size=int(np.prod(idx_shape)),
                                        max_size=int(np.prod(idx_shape)))),
                     dtype="int64").reshape(idx_shape)
    rest = data.draw(shapes(max_dims=2, min_side=1))
    dy = array(data, data.draw(st.sampled_from(FLOATS)), (*idx_shape, *rest), bound=1e3)
    return {"dy": dy, "index": idx}, {"num": num}


def _gather_grad_ref(ins: dict, attrs: dict, dtypes: dict) -> dict:
    num, dy, idx = int(attrs["num"]), f64(ins["dy"]), ins["index"]
    out = np.zeros((num, *dy.shape[idx.ndim:]))
    with E():
        np.add.at(out, idx.reshape(-1) % num, dy.reshape(idx.size, *dy.shape[idx.ndim:]))
    return {"out": out}


def _one_hot_draw(data: st.DataObject) -> tuple[dict, dict]:
    n = data.draw(st.integers(1, 5))
    dt = data.draw(st.sampled_from(INTS))
    x = np.asarray(data.draw(st.lists(st.integers(0, n - 1), max_size=6)), dtype=dt)
    return {"in": x.reshape(data.draw(st.sampled_from([(-1,), (1, -1)])) if x.size else (0,))}, \
        {"num_classes": n}


def _add_n_draw(data: st.DataObject) -> tuple[dict, dict]:
    """The parts of one partial sum (P -> B boxing): one shape, one dtype."""
    shape, dt = data.draw(shapes()), data.draw(st.sampled_from(NUMERIC))
    k = data.draw(st.integers(1, 4))
    return {f"in_{i}": array(data, dt, shape) for i in range(k)}, {}


def _add_n_ref(ins: dict, attrs: dict, dtypes: dict) -> dict:
    """Summed in order, in the dtype of the parts (what a device's add kernel does)."""
    with E():
        parts = [ins[k] for k in sorted(ins, key=lambda k: int(k[3:]))]
        total = parts[0].copy()
        for p in parts[1:]:
            total = total + p
        return {"out": total}


def _dropout_draw(grad: bool) -> Any:
    def draw(data: st.DataObject) -> tuple[dict, dict]:
        x = array(data, data.draw(st.sampled_from(FLOATS)), data.draw(shapes()))
        attrs = {"p": data.draw(st.sampled_from([0.0, 0.1, 0.5, 0.9])),
                 "seed": data.draw(st.integers(0, 2**31))}
        return {("dy" if grad else "in"): x}, attrs
    return draw


def _dropout_ref(ins: dict, attrs: dict, dtypes: dict) -> dict:
    (x,) = ins.values()
    p = float(attrs["p"])
    keep = np.random.default_rng([int(attrs["seed"]), 0]).random(x.shape) >= p
    with E():
        return {"out": f64(x) * (keep / (1.0 - p))}


ORACLES: dict[str, Oracle] = {
    "softmax": Oracle(_softmax_draw, lambda i, a, d: {
        "out": _softmax(f64(i["in"]), int(a.get("axis", -1)))}),
    "log_softmax": Oracle(lambda data: _softmax_draw_floats(data), lambda i, a, d: {
        "out": _log_softmax(f64(i["in"]), int(a.get("axis", -1)))}),
    "bias_add": Oracle(_bias_draw, _bias_ref),
    "matmul": Oracle(_mm_draw(False), _mm_ref),
    "batch_matmul": Oracle(_mm_draw(True), _mm_ref),
    "reduce_sum": Oracle(_reduce_draw(NUMERIC), _reduce_ref(np.sum)),
    "reduce_mean": Oracle(_reduce_draw(FLOATS), _reduce_ref(np.mean)),
    "reduce_max": Oracle(_reduce_draw(NUMERIC, nonempty=True), _reduce_ref(np.max)),
    "reduce_min": Oracle(_reduce_draw(NUMERIC, nonempty=True), _reduce_ref(np.min)),
    "argmax": Oracle(_arg_draw, _arg_ref(np.argmax)),
    "argmin": Oracle(_arg_draw, _arg_ref(np.argmin)),
    "layer_norm": Oracle(_ln_draw, _ln_ref),
    "layer_norm_grad": Oracle(_ln_grad_draw, _ln_grad_ref, scale=_ln_grad_scale),
    "cross_entropy": Oracle(_ce_draw(False), _ce_ref),
    "cross_entropy_grad": Oracle(_ce_draw(True), _ce_grad_ref),
    "reshape": _layout(_reshape_attrs, lambda x, a: x.reshape(a["shape"])),
    "transpose": _layout(_perm_attrs, lambda x, a: x.transpose(a.get("perm"))),
    "cast": Oracle(_cast_draw, lambda i, a, d: {"out": i["in"].astype(a["dtype"])}),
    "concat": Oracle(_concat_draw, _concat_ref),
    "slice": _layout(_slice_attrs, _slice, min_dims=1),
    "strided_slice": _layout(_strided_attrs, _strided),
    "strided_slice_grad": Oracle(_ssg_draw, _ssg_ref),
    "broadcast_to": _layout(_broadcast_attrs, lambda x, a: np.broadcast_to(x, a["shape"])),
    "gather": Oracle(_gather_draw, lambda i, a, d: {"out": np.take(i["in"], i["index"], axis=0)}),
    "gather_grad": Oracle(_gather_grad_draw, _gather_grad_ref),
    "one_hot": Oracle(_one_hot_draw, lambda i, a, d: {
        "out": (i["in"][..., None] == np.arange(a["num_classes"])).astype(np.int64)}),
    "add_n": Oracle(_add_n_draw, _add_n_ref),
    "dropout": Oracle(_dropout_draw(False), _dropout_ref),
    "dropout_grad": Oracle(_dropout_draw(True), _dropout_ref),
}


def _softmax_draw_floats(data: st.DataObject) -> tuple[dict, dict]:
    """log_softmax takes floating inputs only."""
    dt = data.draw(st.sampled_from(FLOATS))
    shape = data.draw(shapes(min_dims=1))
    x = array(data, dt, shape, bound=1e3)
    return {"in": x}, ({"axis": _axis(data, len(shape))} if data.draw(st.booleans()) else {})
