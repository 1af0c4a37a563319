"""Shared shape/dtype inference helpers."""

from __future__ import annotations

import numpy as np

from actorflow.errors import OpError
from actorflow.kernels.blob import BlobDesc
from actorflow.kernels.dtype import as_dtype, promote


def broadcast_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        raise OpError(f"shapes {a} and {b} cannot be broadcast together") from None


def result_dtype(*dtypes: str) -> str:
    """The dtype of combining tensors of these dtypes (``kernels/dtype.py``'s promotion)."""
    out = dtypes[0]
    for d in dtypes[1:]:
        out = promote(out, d)
    return as_dtype(out)


def norm_axis(axis: int, ndim: int, what: str = "axis") -> int:
    if not -ndim <= axis < max(ndim, 1):
        raise OpError(f"{what} {axis} is out of range for a tensor of rank {ndim}")
    return axis % max(ndim, 1)


def same(d: BlobDesc) -> dict[str, BlobDesc]:
    return {"out": BlobDesc(d.shape, d.dtype)}
