"""References of matmul, bias_add, softmax/log_softmax (the max subtracted), reductions,
layout and indexing ops, the layers' and losses' ops, dropout's seed rule, generators and
learning-rate schedules as their documents state them."""

from __future__ import annotations

import math

import numpy as np

from actorflow.kernels import dtype as dt
from tests.kernels.ref_core import REFS, Ref, arith, as_result, axis_of, calc, f64, ref


# -- linear algebra, reductions ---------------------------------------------------------------
def _mm(a: np.ndarray, b: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "bool":
        return (a.astype(np.int64) @ b.astype(np.int64)) != 0
    return calc(a, dtype) @ calc(b, dtype)


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
    return as_result(arith("add", x, b.reshape(shape), dtype), dtype)


@ref("softmax")
def _softmax(ins, attrs, piece):
    x = ins["in"]
    axis = int(attrs.get("axis", -1)) if x.ndim else None
    if x.size == 0:
        return np.zeros(x.shape, dt.floating(x.dtype.name))
    out = dt.floating(x.dtype.name)
    with np.errstate(all="ignore"):
        x64 = f64(as_result(x, out))  # converted into the result dtype first, as OneFlow
        e = np.exp(x64 - x64.max(axis=axis, keepdims=True))
        return as_result(e / e.sum(axis=axis, keepdims=True), out)


@ref("log_softmax")
def _log_softmax(ins, attrs, piece):
    x = ins["in"]
    axis = int(attrs.get("axis", -1)) if x.ndim else None
    if x.size == 0:
        return np.zeros(x.shape, x.dtype)
    with np.errstate(all="ignore"):
        x64 = f64(x)
        m = x64.max(axis=axis, keepdims=True)
        # (x - m) - log(sum): never x - (m + log(sum)), which cancels m's digits
        return as_result((x64 - m) - np.log(np.exp(x64 - m).sum(axis=axis, keepdims=True)),
                         x.dtype.name)


def _sum_dtype(x: np.ndarray) -> str:
    return "int64" if x.dtype.kind in "iub" else x.dtype.name


@ref("reduce_sum")
def _reduce_sum(ins, attrs, piece):
    x = ins["in"]
    dtype = _sum_dtype(x)
    with np.errstate(all="ignore"):
        return as_result(calc(x, dtype).sum(axis=axis_of(attrs, x.ndim),
                                             keepdims=bool(attrs.get("keepdims"))), dtype)


@ref("reduce_mean")
def _reduce_mean(ins, attrs, piece):
    x = ins["in"]
    with np.errstate(all="ignore"):
        mean = f64(x).mean(axis=axis_of(attrs, x.ndim), keepdims=bool(attrs.get("keepdims")))
        return as_result(mean, x.dtype.name)


def _extreme(largest: bool) -> Ref:
    def r(ins, attrs, piece):
        x = ins["in"]
        c = calc(x, x.dtype.name)
        fn = np.max if largest else np.min  # both propagate NaN, as OneFlow's do
        return as_result(fn(c, axis=axis_of(attrs, x.ndim), keepdims=bool(attrs.get("keepdims"))),
                         x.dtype.name)
    return r


REFS["reduce_max"] = _extreme(True)
REFS["reduce_min"] = _extreme(False)


def _arg(largest: bool) -> Ref:
    def r(ins, attrs, piece):
        x = calc(ins["in"], ins["in"].dtype.name)
        axis = attrs.get("axis")
        if axis is None or x.ndim == 0:
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
            idx = np.expand_dims(idx, axis) if attrs.get("axis") is not None and \
                ins["in"].ndim else idx.reshape([1] * ins["in"].ndim)
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
    return np.concatenate([as_result(calc(x, dtype), dtype) for x in xs],
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
def _row_max_and_log_sum(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's max m and log(sum(exp(x - m))): the log-sum-exp is m + that, kept apart
    so no result subtracts two numbers as large as m."""
    m = x.max(axis=1, keepdims=True) if x.size else np.zeros((x.shape[0], 1))
    return m, np.log(np.exp(x - m).sum(axis=1, keepdims=True))


@ref("cross_entropy")
def _cross_entropy(ins, attrs, piece):
    x, t = f64(ins["logits"]), ins["target"].astype(np.int64)
    ignore = int(attrs.get("ignore_index", -100))
    valid = t != ignore
    with np.errstate(all="ignore"):
        picked = x[np.arange(len(t)), np.where(valid, t, 0)]
        m, log_sum = _row_max_and_log_sum(x)
        loss = np.where(valid, (m[:, 0] - picked) + log_sum[:, 0], 0.0)
    return as_result(loss, ins["logits"].dtype.name)


@ref("cross_entropy_grad")
def _cross_entropy_grad(ins, attrs, piece):
    x, t, dy = f64(ins["logits"]), ins["target"].astype(np.int64), f64(ins["dy"])
    ignore = int(attrs.get("ignore_index", -100))
    valid = t != ignore
    with np.errstate(all="ignore"):
        m, _ = _row_max_and_log_sum(x)
        e = np.exp(x - m)
        p = e / e.sum(axis=1, keepdims=True)
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
    rest = dy.shape[ins["index"].ndim:]
    rows = f64(dy).reshape(idx.shape[0], math.prod(rest))
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
    # x times the mask's scale (0 or 1/(1-p) in x's dtype), as the frameworks compute it:
    # a NaN or inf that is dropped gives NaN
    scale = f64(as_result(keep / (1.0 - p), x.dtype.name))
    with np.errstate(all="ignore"):
        return as_result(f64(x) * scale, x.dtype.name)


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
    base = spec.get("base_lr", 0.0)
    if kind == "multistep":
        return base * spec["gamma"] ** sum(1 for m in spec["milestones"] if m <= t)
    if kind == "exponential":
        return base * spec["gamma"] ** t
    if kind == "cosine_decay":
        n, a = spec["decay_steps"], spec["alpha"]
        return base * (a if t >= n else (1 - a) * 0.5 * (1 + math.cos(math.pi * t / n)) + a)
    if kind == "linear":
        a, b, n = spec["start_factor"], spec["end_factor"], spec["total_iters"]
        return base * (b if t >= n else a + (b - a) * t / n)
    if kind == "constant_factor":
        return base * (spec["factor"] if t < spec["total_iters"] else 1.0)
    if kind == "polynomial":
        n, end = spec["decay_batch"], spec["end_learning_rate"]
        if spec["cycle"]:
            t = max(t, 1)
            n *= math.ceil(t / n)
        else:
            t = min(t, n)
        return (base - end) * (1 - t / n) ** spec["power"] + end
    if kind == "warmup":  # OneFlow 0.9's WarmupLR: LinearLR/ConstantLR, then the schedule
        w, after, prefix = spec["warmup_iters"], spec["after"], spec.get("prefix", False)
        if t >= w:
            return lr_reference(t - w if prefix else t, after)
        base, start = after["base_lr"], spec["warmup_factor"]
        if spec.get("method", "linear") != "linear":
            return base * start
        end = base if prefix or after["kind"] == "constant" else lr_reference(w, after)
        return base * start + (end - base * start) * t / w  # end_factor = end / base
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
