"""The functional ops a model needs (issue 22), declared like ``functional.py``'s (whose
ops this module re-exports: ``actorflow.functional`` is this module): math and activations,
comparisons and ``where``, max/min/argmax,
log_softmax and cross_entropy, layer_norm, embedding, indexing and slicing, shape ops
(unsqueeze, squeeze, flatten, expand, stack, split, chunk), masked_fill, dropout, one_hot,
and the gradient kernels the gradient rules call.  Each op's kernel, inference, SBP rule
and gradient rule are in ``kernels/ops/``; this file only binds arguments.
"""

from __future__ import annotations

import builtins
import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from actorflow.errors import UsageError
from actorflow.frontend.dispatch import op_expr as E
from actorflow.frontend.functional import *  # noqa: F403  (F = the base ops + these)
from actorflow.frontend.functional import __all__ as _BASE
from actorflow.frontend.functional import _reduce, _unary, define


def _attr_unary(op_type: str, *names: str) -> Callable[..., Any]:
    """An op of one tensor whose other parameters (in signature order) are attrs."""
    e = E(op_type, ("in",))

    def fn(x: Any, *vals: Any, **kw: Any) -> Any:
        attrs = dict(zip(names, vals))
        attrs.update({_ATTR_NAMES.get(k, k): v for k, v in kw.items()})
        return e({"in": x}, attrs)
    return fn


_ATTR_NAMES = {"dim": "axis"}


log = define("log", [("Tensor (Tensor x)", _unary("log"))], "natural logarithm")
sqrt = define("sqrt", [("Tensor (Tensor x)", _unary("sqrt"))])
rsqrt = define("rsqrt", [("Tensor (Tensor x)", _unary("rsqrt"))], "1 / sqrt(x)")
sigmoid = define("sigmoid", [("Tensor (Tensor x)", _unary("sigmoid"))])
silu = define("silu", [("Tensor (Tensor x)", _unary("silu"))], "x * sigmoid(x)")
gelu = define("gelu", [("Tensor (Tensor x, String approximate=\"none\")",
                        _attr_unary("gelu", "approximate"))],
              "x * Phi(x); approximate='tanh' uses GPT-2's tanh form")
softplus = define("softplus", [("Tensor (Tensor x, Float beta=1.0, Float threshold=20.0)",
                                _attr_unary("softplus", "beta", "threshold"))])
abs = define("abs", [("Tensor (Tensor x)", _unary("abs"))])
sign = define("sign", [("Tensor (Tensor x)", _unary("sign"))])
_E_CLIP = E("clip", ("in",))


def _clip(x: Any, min: float | None = None, max: float | None = None) -> Any:
    if min is None and max is None:
        raise UsageError("clip(): give at least one of min and max")
    return _E_CLIP({"in": x}, {"min": min, "max": max})


clip = define("clip", [("Tensor (Tensor x, Scalar? min=None, Scalar? max=None)", _clip)])
clamp = define("clamp", [("Tensor (Tensor x, Scalar? min=None, Scalar? max=None)", _clip)])
fill_like = define("fill_like", [("Tensor (Tensor x, Scalar value)",
                                  _attr_unary("fill_like", "value"))],
                   "a tensor like x with every element value")
_E_FILL_LIKE = E("fill_like", ("in",))
zeros_like = define("zeros_like", [("Tensor (Tensor x)",
                                    lambda x: _E_FILL_LIKE({"in": x}, {"value": 0}))],
                    "zeros of x's shape, dtype and device (OneFlow's ``zeros_like``)")
ones_like = define("ones_like", [("Tensor (Tensor x)",
                                  lambda x: _E_FILL_LIKE({"in": x}, {"value": 1}))],
                   "ones of x's shape, dtype and device (OneFlow's ``ones_like``)")
_E_RELU_GRAD, _E_GELU_GRAD = E("relu_grad", ("dy", "y")), E("gelu_grad", ("dy", "x"))
relu_grad = define("relu_grad", [("Tensor (Tensor dy, Tensor y)",
                                  lambda dy, y: _E_RELU_GRAD({"dy": dy, "y": y}))])
gelu_grad = define("gelu_grad", [("Tensor (Tensor dy, Tensor x, String approximate=\"none\")",
                                  lambda dy, x, approximate: _E_GELU_GRAD(
                                      {"dy": dy, "x": x}, {"approximate": approximate}))])


# -- comparisons and logic ----------------------------------------------------------------
def _compare(name: str) -> Any:
    e_tt, e_ts = E(name, ("a", "b")), E(f"scalar_{name}", ("in",))
    return define(name, [
        ("Tensor (Tensor input, Tensor other)", lambda input, other: e_tt(
            {"a": input, "b": other})),
        ("Tensor (Tensor input, Scalar other)", lambda input, other: e_ts(
            {"in": input}, {"scalar": other}))], f"{name}(input, other) as bool")


eq, ne, lt, le, gt, ge = (_compare(n) for n in ("eq", "ne", "lt", "le", "gt", "ge"))
logical_and, logical_or, logical_xor = (_compare(n) for n in (
    "logical_and", "logical_or", "logical_xor"))
logical_not = define("logical_not", [("Tensor (Tensor x)", _unary("logical_not"))])
_E_WHERE, _E_WHERE_Y, _E_WHERE_X = (E("where", ("cond", "x", "y")),
                                    E("where_scalar_y", ("cond", "x")),
                                    E("where_scalar_x", ("cond", "y")))


where = define("where", [
    ("Tensor (Tensor condition, Tensor x, Tensor y)",
     lambda condition, x, y: _E_WHERE({"cond": condition, "x": x, "y": y})),
    ("Tensor (Tensor condition, Tensor x, Scalar y)",
     lambda condition, x, y: _E_WHERE_Y({"cond": condition, "x": x}, {"y": y})),
    ("Tensor (Tensor condition, Scalar x, Tensor y)",
     lambda condition, x, y: _E_WHERE_X({"cond": condition, "y": y}, {"x": x})),
], "x where condition else y (broadcasting)")
_E_MASKED = E("masked_fill", ("in", "mask"))
masked_fill = define("masked_fill", [
    ("Tensor (Tensor x, Tensor mask, Scalar value)",
     lambda x, mask, value: _E_MASKED({"in": x, "mask": mask}, {"value": value}))],
    "value where mask (broadcast to x) else x")


# -- max / min / argmax -----------------------------------------------------------------------
_E_ARGMAX, _E_ARGMIN = E("argmax", ("in",)), E("argmin", ("in",))


def _arg(e: Any) -> Callable[..., Any]:
    def fn(x: Any, dim: int | None = None, keepdim: bool = False) -> Any:
        return e({"in": x}, {"axis": dim, "keepdims": keepdim})
    return fn


argmax = define("argmax", [("Tensor (Tensor x, Int? dim=None, Bool keepdim=False)",
                            _arg(_E_ARGMAX))], "index of the largest element (int64)")
argmin = define("argmin", [("Tensor (Tensor x, Int? dim=None, Bool keepdim=False)",
                            _arg(_E_ARGMIN))])
amax = define("amax", [("Tensor (Tensor x, IntList? dim=None, Bool keepdim=False)",
                        _reduce("reduce_max"))])
amin = define("amin", [("Tensor (Tensor x, IntList? dim=None, Bool keepdim=False)",
                        _reduce("reduce_min"))])


def _max_dim(reduce: Callable[..., Any], arg: Callable[..., Any]) -> Callable[..., Any]:
    def fn(x: Any, dim: int, keepdim: bool = False) -> Any:
        return reduce(x, (dim,), keepdim), arg(x, dim, keepdim)
    return fn


def _binary_of(op_type: str) -> Callable[..., Any]:
    e = E(op_type, ("a", "b"))
    return lambda x, other: e({"a": x, "b": other})


max = define("max", [
    ("Tensor (Tensor x)", lambda x: _reduce("reduce_max")(x, None, False)),
    ("TensorTuple (Tensor x, Int dim, Bool keepdim=False)",
     _max_dim(_reduce("reduce_max"), _arg(_E_ARGMAX))),
    ("Tensor (Tensor x, Tensor other)", _binary_of("maximum")),
], "max of all elements; (values, indices) along dim; or element-wise with other")
min = define("min", [
    ("Tensor (Tensor x)", lambda x: _reduce("reduce_min")(x, None, False)),
    ("TensorTuple (Tensor x, Int dim, Bool keepdim=False)",
     _max_dim(_reduce("reduce_min"), _arg(_E_ARGMIN))),
    ("Tensor (Tensor x, Tensor other)", _binary_of("minimum")),
])


# -- losses and layers ------------------------------------------------------------------------
log_softmax = define("log_softmax", [("Tensor (Tensor x, Int dim=-1)", _attr_unary(
    "log_softmax", "axis"))])
_E_CE, _E_CE_GRAD = E("cross_entropy", ("logits", "target")), E(
    "cross_entropy_grad", ("dy", "logits", "target"))


def _cross_entropy(input: Any, target: Any, ignore_index: int = -100,
                   reduction: str = "mean") -> Any:
    if input.ndim != 2:
        input = _reshape(_move_class_last(input), [-1, input.shape[1]])
        target = _reshape(target, [-1])
    loss = _E_CE({"logits": input, "target": target}, {"ignore_index": ignore_index})
    if reduction == "none":
        return loss
    if reduction == "sum":
        return _reduce("reduce_sum")(loss, None, False)
    if reduction != "mean":
        raise UsageError(f"cross_entropy(): reduction must be 'mean', 'sum' or 'none', not "
                         f"{reduction!r}")
    total = _reduce("reduce_sum")(loss, None, False)
    if ignore_index < 0 and ignore_index != -100:
        return total * (1.0 / loss.shape[0])
    valid = _reduce("reduce_sum")(_cast(ne(target, ignore_index), loss.dtype), None, False)
    return total / valid


def _move_class_last(x: Any) -> Any:
    perm = [0, *range(2, x.ndim), 1]
    from actorflow.frontend.functional import transpose

    return transpose(x, perm)


def _reshape(x: Any, shape: list[int]) -> Any:
    from actorflow.frontend.functional import reshape

    return reshape(x, shape)


def _cast(x: Any, dtype: str) -> Any:
    from actorflow.frontend.functional import cast

    return cast(x, dtype)


cross_entropy = define("cross_entropy", [
    ("Tensor (Tensor input, Tensor target, *, Int ignore_index=-100, String reduction=\"mean\")",
     _cross_entropy)],
    "softmax cross-entropy with integer class targets: input (N, C) or (N, C, d...)")
cross_entropy_grad = define("cross_entropy_grad", [
    ("Tensor (Tensor dy, Tensor logits, Tensor target, Int ignore_index=-100)",
     lambda dy, logits, target, ignore_index: _E_CE_GRAD(
         {"dy": dy, "logits": logits, "target": target}, {"ignore_index": ignore_index}))])
_E_LN, _E_LN_GRAD = E("layer_norm", ("in",)), E("layer_norm_grad", ("dy", "x"))


def _layer_norm(x: Any, normalized_shape: tuple[int, ...], weight: Any = None,
                bias: Any = None, eps: float = 1e-5) -> Any:
    k = len(normalized_shape)
    if tuple(x.shape[x.ndim - k:]) != tuple(normalized_shape):
        raise UsageError(f"layer_norm(): normalized_shape {tuple(normalized_shape)} is not the "
                         f"trailing shape of the input {tuple(x.shape)}")
    y = _E_LN({"in": x}, {"normalized_ndim": k, "eps": eps})
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


layer_norm = define("layer_norm", [
    ("Tensor (Tensor x, IntList normalized_shape, Tensor? weight=None, Tensor? bias=None, "
     "Float eps=1e-05)", _layer_norm)])
layer_norm_grad = define("layer_norm_grad", [
    ("Tensor (Tensor dy, Tensor x, Int normalized_ndim=1, Float eps=1e-05)",
     lambda dy, x, normalized_ndim, eps: _E_LN_GRAD(
         {"dy": dy, "x": x}, {"normalized_ndim": normalized_ndim, "eps": eps}))])
_E_GATHER, _E_GATHER_GRAD = E("gather", ("in", "index")), E("gather_grad", ("dy", "index"))
embedding = define("embedding", [
    ("Tensor (Tensor input, Tensor weight)",
     lambda input, weight: _E_GATHER({"in": weight, "index": input}))],
    "rows of weight picked by the integer ids in input")
index_select0 = define("index_select0", [
    ("Tensor (Tensor x, Tensor index)", lambda x, index: _E_GATHER({"in": x, "index": index}))],
    "x[index] for an integer tensor index (rows of axis 0)")
gather_grad = define("gather_grad", [
    ("Tensor (Tensor dy, Tensor index, Int num)",
     lambda dy, index, num: _E_GATHER_GRAD({"dy": dy, "index": index}, {"num": num}))])
_E_DROPOUT, _E_DROPOUT_GRAD = E("dropout", ("in",)), E("dropout_grad", ("dy",))
_DROP_SEEDS = itertools.count(int(np.random.SeedSequence().generate_state(1)[0]) >> 1)


def manual_seed(seed: int) -> None:
    """Seed the draws of dropout (and of anything else that asks ``next_seed``)."""
    global _DROP_SEEDS
    _DROP_SEEDS = itertools.count(int(seed) * 1_000_003 % (1 << 31))


def next_seed() -> int:
    return next(_DROP_SEEDS)


def _dropout(x: Any, p: float = 0.5, training: bool = True, seed: int | None = None) -> Any:
    if not training or p == 0.0:
        return x
    if not 0.0 <= p < 1.0:
        raise UsageError(f"dropout(): p must be in [0, 1), got {p}")
    return _E_DROPOUT({"in": x}, {"p": p, "seed": next_seed() if seed is None else seed})


dropout = define("dropout", [
    ("Tensor (Tensor x, Float p=0.5, Bool training=True, *, Int? seed=None)", _dropout)],
    "zero elements with probability p (a new seeded mask per call; per piece in a job)")
dropout_grad = define("dropout_grad", [
    ("Tensor (Tensor dy, Float p, Int seed)",
     lambda dy, p, seed: _E_DROPOUT_GRAD({"dy": dy}, {"p": p, "seed": seed}))])
_E_ONE_HOT = E("one_hot", ("in",))


def _one_hot(x: Any, num_classes: int = -1) -> Any:
    if num_classes < 0:
        if x.interpreter == "lazy":
            raise UsageError("one_hot(): give num_classes inside a job (values are not known "
                             "while it is traced)")
        num_classes = int(np.asarray(x.numpy()).max()) + 1
    return _E_ONE_HOT({"in": x}, {"num_classes": num_classes})


one_hot = define("one_hot", [("Tensor (Tensor x, Int num_classes=-1)", _one_hot)])
_E_LR = E("learning_rate", ("step",))
learning_rate = define("learning_rate", [
    ("Tensor (Tensor step, Dict spec)", lambda step, spec: _E_LR({"step": step}, {"spec": spec}))],
    "a schedule's learning rate at the step counter (kernels/ops/lr_schedule.py)")


# -- shape ops ----------------------------------------------------------------------------------
def _shape_of(x: Any) -> list[int]:
    return [int(s) for s in x.shape]


def _dim(d: int, n: int, what: str) -> int:
    if not -n <= d < builtins.max(n, 1):
        raise IndexError(f"{what}: dimension {d} out of range for a tensor of rank {n}")
    return d % builtins.max(n, 1)


def _unsqueeze(x: Any, dim: int) -> Any:
    shape = _shape_of(x)
    d = _dim(dim, len(shape) + 1, "unsqueeze()")
    return _reshape(x, [*shape[:d], 1, *shape[d:]])


def _squeeze(x: Any, dim: tuple[int, ...] | None = None) -> Any:
    shape = _shape_of(x)
    drop = ({i for i, s in enumerate(shape) if s == 1} if dim is None else
            {_dim(d, len(shape), "squeeze()") for d in dim if shape[d] == 1})
    return _reshape(x, [s for i, s in enumerate(shape) if i not in drop])


def _flatten(x: Any, start_dim: int = 0, end_dim: int = -1) -> Any:
    shape = _shape_of(x)
    if not shape:
        return _reshape(x, [1])
    a, b = _dim(start_dim, len(shape), "flatten()"), _dim(end_dim, len(shape), "flatten()")
    return _reshape(x, [*shape[:a], math.prod(shape[a:b + 1]), *shape[b + 1:]])


_E_BT = E("broadcast_to", ("in",))


def _broadcast_to(x: Any, shape: tuple[int, ...]) -> Any:
    lead = len(shape) - x.ndim
    want = [x.shape[i - lead] if s == -1 and i >= lead else s for i, s in enumerate(shape)]
    if tuple(want) == tuple(x.shape):
        return x
    return _E_BT({"in": x}, {"shape": want})


unsqueeze = define("unsqueeze", [("Tensor (Tensor x, Int dim)", _unsqueeze)])
squeeze = define("squeeze", [("Tensor (Tensor x, IntList? dim=None)", _squeeze)])
flatten = define("flatten", [("Tensor (Tensor x, Int start_dim=0, Int end_dim=-1)", _flatten)])
broadcast_to = define("broadcast_to", [("Tensor (Tensor x, IntList shape)", _broadcast_to)])
expand = define("expand", [("Tensor (Tensor x, IntList shape)", _broadcast_to)],
                "broadcast_to; -1 keeps a dimension")
_E_SLICE = E("slice", ("in",))


def _narrow(x: Any, dim: int, start: int, length: int) -> Any:
    d = _dim(dim, x.ndim, "narrow()")
    return _E_SLICE({"in": x}, {"axis": d, "start": start, "stop": start + length})


narrow = define("narrow", [("Tensor (Tensor x, Int dim, Int start, Int length)", _narrow)])


def _stack(tensors: list[Any], dim: int = 0) -> Any:
    from actorflow.frontend.functional import concat

    n = tensors[0].ndim + 1
    d = _dim(dim, n, "stack()")
    return concat([_unsqueeze(t, d) for t in tensors], d)


stack = define("stack", [("Tensor (TensorList tensors, Int dim=0)", _stack)])


def _split(x: Any, split_size_or_sections: tuple[int, ...], dim: int = 0) -> tuple[Any, ...]:
    d = _dim(dim, x.ndim, "split()")
    n = x.shape[d]
    sizes = list(split_size_or_sections)
    if len(sizes) == 1:
        step = sizes[0]
        if step < 1:
            raise UsageError(f"split(): split size must be >= 1, got {step}")
        sizes = [builtins.min(step, n - i) for i in range(0, n, step)]
    if builtins.sum(sizes) != n:
        raise UsageError(f"split(): sections {sizes} do not add up to dimension {d}'s size {n}")
    starts = list(itertools.accumulate([0, *sizes]))
    return tuple(_narrow(x, d, s, k) for s, k in zip(starts, sizes))


def _chunk(x: Any, chunks: int, dim: int = 0) -> tuple[Any, ...]:
    n = x.shape[_dim(dim, x.ndim, "chunk()")]
    if chunks < 1:
        raise UsageError(f"chunk(): chunks must be >= 1, got {chunks}")
    return _split(x, (-(-n // chunks),), dim)


split = define("split", [("TensorTuple (Tensor x, IntList split_size_or_sections, Int dim=0)",
                          _split)])
chunk = define("chunk", [("TensorTuple (Tensor x, Int chunks, Int dim=0)", _chunk)])
_E_SS, _E_SSG = E("strided_slice", ("in",)), E("strided_slice_grad", ("dy",))
strided_slice_grad = define("strided_slice_grad", [
    ("Tensor (Tensor dy, IntList shape, IntList begin, IntList end, IntList step)",
     lambda dy, shape, begin, end, step: _E_SSG({"dy": dy}, {
         "shape": list(shape), "begin": list(begin), "end": list(end), "step": list(step)}))])


def getitem(x: Any, index: Any) -> Any:
    """``x[index]``: ints, slices (positive steps), ``...``, ``None``; an integer tensor
    (rows of axis 0); a bool tensor of x's shape (eager only: its count is data)."""
    if _is_tensor(index):
        if str(index.dtype) == "bool":
            return _mask_select(x, index)
        return index_select0(x, index)
    items = list(index) if isinstance(index, tuple) else [index]
    if builtins.sum(1 for i in items if i is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    n_axes = builtins.sum(1 for i in items if i is not None and i is not Ellipsis)
    if n_axes > x.ndim:
        raise IndexError(f"too many indices for a tensor of rank {x.ndim}: {index!r}")
    if Ellipsis in items:
        k = items.index(Ellipsis)
        items[k:k + 1] = [slice(None)] * (x.ndim - n_axes)
    else:
        items += [slice(None)] * (x.ndim - n_axes)
    shape = _shape_of(x)
    begin, end, step, out_shape = [], [], [], []
    ax = 0
    for it in items:
        if it is None:
            out_shape.append(1)
            continue
        n = shape[ax]
        if isinstance(it, slice):
            b, e, s = it.indices(n)
            if s < 1:
                raise IndexError("negative or zero slice steps are not supported")
            e = builtins.max(e, b)
            begin.append(b)
            end.append(e)
            step.append(s)
            out_shape.append(len(range(b, e, s)))
        elif isinstance(it, (int, np.integer)) and not isinstance(it, bool):
            i = int(it)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for dimension {ax} with size {n}")
            i %= n
            begin.append(i)
            end.append(i + 1)
            step.append(1)
        else:
            raise IndexError(f"unsupported index {it!r} (ints, slices, ..., None, or one "
                             "integer/bool tensor)")
        ax += 1
    y = x
    if (begin, end, step) != ([0] * len(shape), shape, [1] * len(shape)):
        y = _E_SS({"in": x}, {"begin": begin, "end": end, "step": step})
    if tuple(out_shape) != tuple(y.shape):
        y = _reshape(y, out_shape)
    return y


def _is_tensor(v: Any) -> bool:
    return hasattr(v, "interpreter") and hasattr(v, "shape")


def _mask_select(x: Any, mask: Any) -> Any:
    if x.interpreter == "lazy" or mask.interpreter == "lazy":
        raise UsageError("x[mask] with a bool tensor has a data-dependent shape, which a job "
                         "cannot have; use where()/masked_fill() inside a job")
    if tuple(mask.shape) != tuple(x.shape):
        raise IndexError(f"the mask of shape {tuple(mask.shape)} must match the indexed tensor "
                         f"{tuple(x.shape)}")
    from actorflow.frontend.creation import tensor

    idx = np.flatnonzero(np.asarray(mask.numpy()))
    return index_select0(_reshape(x, [-1]), tensor(idx.astype(np.int64), device=x.device))


__all__ = [*_BASE, "abs", "amax", "amin", "argmax", "argmin", "broadcast_to", "chunk", "clamp",
           "clip", "cross_entropy", "cross_entropy_grad", "dropout", "dropout_grad", "embedding",
           "eq",
           "expand", "fill_like", "flatten", "gather_grad", "ge", "gelu", "gelu_grad",
           "getitem", "gt", "index_select0", "layer_norm", "layer_norm_grad", "le",
           "learning_rate", "log",
           "log_softmax", "logical_and", "logical_not", "logical_or", "logical_xor", "lt",
           "manual_seed", "masked_fill", "max", "min", "narrow", "ne", "one_hot", "ones_like",
           "relu_grad", "rsqrt", "sigmoid", "sign", "silu", "softplus", "split", "sqrt",
           "squeeze", "stack",
           "strided_slice_grad", "unsqueeze", "where", "zeros_like"]
