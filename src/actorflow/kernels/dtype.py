"""dtype objects (``af.float32``, ``af.int64``, ...) and OneFlow's type promotion.

A ``DType`` is a ``str`` subclass equal to its numpy name, so plans, messages and every
place that compares ``t.dtype == "float32"`` keep working, while ``af.float32`` prints as
OneFlow's ``oneflow.float32`` does and ``t.dtype is af.float32`` holds (interned).

Type promotion (one rule set, used by every op's dtype inference, so eager ops and jobs
agree; ``docs/oneflow.md`` lists where it departs from numpy):

* categories ``bool < integer < float``;
* two tensors (neither 0-d): the operand of the higher category gives the dtype
  (``int64 + float16 -> float16``); within one category the wider one
  (``float16 + float32 -> float32``, ``int32 + int64 -> int64``; ``uint8 + int8 -> int16``);
* a Python number, or a 0-d tensor, beside a tensor of rank >= 1: the tensor's dtype, unless
  the number is of a higher category, then that category's default (``int64`` for ints and
  bools given as numbers, ``float32`` for floats): ``int64 + 2.5 -> float32``,
  ``bool + 1 -> int64``, ``float16 + 2.5 -> float16``;
* true division (and ``pow`` of two tensors) of integers or bools gives ``float32``;
* floating functions (``exp``, ``tanh``, ...) of integers or bools give ``float32``.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class DType(str):
    """A dtype object: equal to (and hashing like) its numpy name, printed as OneFlow does."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"actorflow.{str.__str__(self)}"

    @property
    def is_floating_point(self) -> bool:
        return np.dtype(str(self)).kind == "f"

    @property
    def itemsize(self) -> int:
        return np.dtype(str(self)).itemsize

    def __reduce__(self) -> Any:  # copy/deepcopy only (plans never pickle)
        return (as_dtype, (str(self),))


NAMES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64")
DTYPES: dict[str, DType] = {n: DType(n) for n in NAMES}
# OneFlow's names -> the dtype they mean (flow.float is flow.float32, flow.long is int64, ...)
ALIASES: dict[str, str] = {
    "float": "float32", "double": "float64", "half": "float16", "int": "int32",
    "long": "int64", "char": "int8", "short": "int16",
}
DEFAULT_FLOAT = DTYPES["float32"]
DEFAULT_INT = DTYPES["int64"]

_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2}


def as_dtype(value: Any) -> DType:
    """The interned DType of a name, numpy dtype, numpy scalar type or DType."""
    d = DTYPES.get(value) if isinstance(value, str) else None
    if d is not None:
        return d
    if isinstance(value, str) and value in ALIASES:
        return DTYPES[ALIASES[value]]
    try:
        name = np.dtype(value).name
    except TypeError:
        raise TypeError(f"unknown dtype {value!r}; known: {', '.join(NAMES)}") from None
    d = DTYPES.get(name)
    if d is None:
        raise TypeError(f"dtype {name} is not supported; known: {', '.join(NAMES)}")
    return d


def category(dtype: str) -> int:
    """0 for bool, 1 for integers, 2 for floats."""
    return _CATEGORY[np.dtype(dtype).kind]


def scalar_category(value: Any) -> int:
    """The category of a Python number as an operand: bools count as integers (OneFlow:
    ``bool_tensor + True`` is int64)."""
    return 2 if isinstance(value, float) else 1


def _default(cat: int) -> DType:
    return DEFAULT_FLOAT if cat == 2 else DEFAULT_INT


def promote(a: str, b: str) -> DType:
    """The result dtype of two tensors of rank >= 1 (or two 0-d tensors)."""
    if a == b:
        return as_dtype(a)
    ca, cb = category(a), category(b)
    if ca != cb:
        return as_dtype(a if ca > cb else b)
    return as_dtype(np.promote_types(a, b).name)


def with_scalar(tensor_dtype: str, cat: int) -> DType:
    """A tensor's dtype beside a number (or 0-d tensor) of category ``cat``."""
    if cat > category(tensor_dtype):
        return _default(cat)
    return as_dtype(tensor_dtype)


def binary(a: str, a_ndim: int, b: str, b_ndim: int) -> DType:
    """The result dtype of an element-wise op of two tensors (0-d ones act as numbers)."""
    if (a_ndim == 0) == (b_ndim == 0):
        return promote(a, b)
    if a_ndim == 0:
        return with_scalar(b, category(a))
    return with_scalar(a, category(b))


def floating(dtype: str) -> DType:
    """The dtype of a floating function or true division of ``dtype``: integers and bools
    become float32, floats stay."""
    return as_dtype(dtype) if category(dtype) == 2 else DEFAULT_FLOAT


def of_value(value: Any) -> DType:
    """The default dtype of a Python number (``full((5,), 5)`` is int64, as in OneFlow)."""
    if isinstance(value, (bool, np.bool_)):
        return DTYPES["bool"]
    if isinstance(value, (int, np.integer)):
        return DEFAULT_INT
    return DEFAULT_FLOAT


__all__ = [
    "ALIASES",
    "DEFAULT_FLOAT",
    "DEFAULT_INT",
    "DTYPES",
    "NAMES",
    "DType",
    "as_dtype",
    "binary",
    "category",
    "floating",
    "of_value",
    "promote",
    "scalar_category",
    "with_scalar",
]
