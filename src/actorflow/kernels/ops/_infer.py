"""Shared shape/dtype inference helpers."""

from __future__ import annotations

import numpy as np

from actorflow.errors import DimensionError, OpError
from actorflow.kernels.blob import BlobDesc
from actorflow.kernels.dtype import as_dtype, promote


def broadcast_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        pass
    for i in range(1, min(len(a), len(b)) + 1):  # OneFlow's wording, from the last axis
        if a[-i] != b[-i] and 1 not in (a[-i], b[-i]):
            raise OpError(f"shapes {a} and {b} cannot be broadcast together: The size of "
                          f"tensor a ({a[-i]}) must match the size of tensor b ({b[-i]}) at "
                          f"non-singleton dimension {max(len(a), len(b)) - i}")
    raise OpError(f"shapes {a} and {b} cannot be broadcast together")


def result_dtype(*dtypes: str) -> str:
    """The dtype of combining tensors of these dtypes (``kernels/dtype.py``'s promotion)."""
    out = dtypes[0]
    for d in dtypes[1:]:
        out = promote(out, d)
    return as_dtype(out)


def norm_axis(axis: int, ndim: int, what: str = "axis") -> int:
    n = max(ndim, 1)
    if not -n <= axis < n:
        raise DimensionError(f"{what} {axis} is out of range for a tensor of rank {ndim}: "
                             f"Dimension out of range (expected to be in range of [{-n}, "
                             f"{n - 1}], but got {axis})")
    return axis % max(ndim, 1)


def same(d: BlobDesc) -> dict[str, BlobDesc]:
    return {"out": BlobDesc(d.shape, d.dtype)}
