"""Shared shape/dtype inference helpers."""

from __future__ import annotations

from typing import Any

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


def work_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype a kernel computes a float result of ``dtype`` in: float16 results are
    computed in float32 (what GPUs' half kernels do for exp, sums and variances, whose
    float16 intermediates overflow at 65504 or cancel to nothing), others in themselves."""
    return np.dtype("float32") if np.dtype(dtype) == np.float16 else np.dtype(dtype)


def loop_dtype(out_dtype: Any, *operands: Any, int_loops: bool = False) -> dict[str, Any]:
    """``dtype=`` for a ufunc writing ``out_dtype`` from ``operands`` (arrays or numbers),
    when numpy's own loop would be narrower than the result: ``exp`` of int8 runs a float16
    loop, ``int8 ** int8`` an int8 one (3 ** 5 wraps to -13), a uint8 tensor times a 0-d
    float16 one a float16 loop (65520 overflows) — while the result is float32.  A wider
    loop (int32 -> float64) is left to numpy, whose answer rounds once.  Integer results
    are computed in their own dtype (operands taken into it first).  ``int_loops``: the
    function has integer loops (``power``), so integer operands never reach a float one."""
    out = np.dtype(out_dtype)
    if out.kind != "f":
        return {"dtype": out}
    natural = np.result_type(*[o.dtype if hasattr(o, "dtype") else o for o in operands])
    if natural.kind != "f":
        if int_loops:
            return {"dtype": out}
        natural = np.promote_types(natural, np.float16)  # numpy's float loop for integers
    return {"dtype": out} if out.itemsize > natural.itemsize else {}


def scalar_as(value: Any, dtype: Any) -> Any:
    """A Python number converted into ``dtype`` as OneFlow converts an op's scalar: a cast
    (an int wraps: ``int8 + 300`` adds 44; a float rounds), never numpy's overflow error."""
    return np.asarray(value).astype(dtype)[()]
