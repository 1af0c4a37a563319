"""Eager global tensors of the frontend, and creating them region by region.

``EagerGlobalTensor`` adds the shared operators to the eager global tensor; the global
interpreter is registered here and given to the local interpreter, so that
``local.to_global(placement, sbp)`` makes one.  ``global_full``/``global_randn`` (behind
``af.zeros/ones/randn(..., placement=, sbp=)``) make only this rank's region: randn draws
element ``i`` of the logical tensor from a counter-based generator keyed by ``(seed, i)``,
so a region holds the same numbers as drawing the whole tensor and slicing it.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from actorflow.eager.global_interpreter import EagerGlobalInterpreter
from actorflow.eager.global_tensor import GlobalTensor
from actorflow.frontend import functional as F
from actorflow.frontend.dispatch import register_interpreter
from actorflow.frontend.eager_tensor import EAGER_LOCAL
from actorflow.frontend.sbp import NdSbp, as_sbp, from_code
from actorflow.frontend.size import Size
from actorflow.frontend.tensor import TensorMethods
from actorflow.kernels.dtype import DType, as_dtype


class EagerGlobalTensor(TensorMethods, GlobalTensor):
    """A logical tensor over a placement's ranks; ops run on every rank's local part."""

    __slots__ = ("_ag",)

    def _swap_data(self, other: Any) -> None:
        """Take ``other``'s value (its local part); ``other`` gets this one's."""
        if (other.placement, other.sbp) != (self.placement, self.sbp):
            other = other.to_global(self.placement, self.sbp)
        self._local, other._local = other._local, self._local

    @property
    def shape(self) -> Size:
        return Size(self._shape)

    @property
    def dtype(self) -> DType:
        return as_dtype(self._dtype)

    @property
    def sbp(self) -> NdSbp:
        """``(sbp,)``: one SBP per axis of the placement, as OneFlow's ``.sbp``."""
        s = self._sbp
        return s if isinstance(s, NdSbp) else NdSbp((s,))

    def to_local(self) -> Any:
        return GlobalTensor.to_local(self)

    def to_global(self, placement: Any = None, sbp: Any = None) -> Any:
        # through the functional op, so autograd records it (to_global has a gradient rule)
        return F.to_global(self, placement, None if sbp is None else as_sbp(sbp))


def _sbp_of(code: str) -> Any:
    return from_code(code)


EAGER_GLOBAL = register_interpreter("eager.global",
                                    EagerGlobalInterpreter(EagerGlobalTensor, EAGER_LOCAL,
                                                           _sbp_of))
EAGER_LOCAL.global_interp = EAGER_GLOBAL
_CALLS = itertools.count()  # SPMD: the n-th seedless randn is the same call on every rank


def _layout(shape: list[int], placement: Any, sbp: Any) -> tuple[Any, Any, bool]:
    sbp = as_sbp(sbp)
    box, first = EAGER_GLOBAL.my_region(shape, placement, sbp.code)
    return sbp, box, first


def global_full(shape: list[int], value: float, dtype: str, placement: Any, sbp: Any) -> Any:
    """A constant global tensor; with ``partial_sum`` the first rank holds the value and the
    others zeros, so the logical tensor is still the constant."""
    sbp, box, first = _layout(shape, placement, sbp)
    local = None
    if box is not None:
        part = tuple(s.stop - s.start for s in box)
        v = value if sbp.code != "P" or first else 0
        local = EAGER_LOCAL.from_array(np.full(part, v, dtype), dtype=dtype,
                                       device=EAGER_GLOBAL.device_for(placement))
    return EagerGlobalTensor._make(local, tuple(shape), np.dtype(dtype).name, placement, sbp)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64: a well-spread 64-bit hash of each element (a counter-based generator)."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def normal_region(shape: list[int], box: tuple[slice, ...], seed: int) -> np.ndarray:
    """The standard normal values of ``box`` of a tensor of ``shape`` drawn with ``seed``."""
    flat = np.zeros([s.stop - s.start for s in box], np.uint64)
    stride = 1
    for d in range(len(shape) - 1, -1, -1):
        idx = np.arange(box[d].start, box[d].stop, dtype=np.uint64) * np.uint64(stride)
        flat = flat + idx.reshape([-1 if e == d else 1 for e in range(len(shape))])
        stride *= shape[d]
    key = _mix(np.full(1, seed & (2**64 - 1), np.uint64))[0]
    with np.errstate(over="ignore"):
        a = _mix(flat * np.uint64(2) ^ key)
        b = _mix(flat * np.uint64(2) + np.uint64(1) ^ key)
    u1 = ((a >> np.uint64(11)).astype(np.float64) + 1.0) / 2.0**53  # (0, 1]
    u2 = (b >> np.uint64(11)).astype(np.float64) / 2.0**53
    return np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * math.pi * u2)


def global_randn(shape: list[int], dtype: str, seed: int | None, placement: Any,
                 sbp: Any) -> Any:
    sbp, box, first = _layout(shape, placement, sbp)
    if seed is None:
        seed = 0x5EED0000 + next(_CALLS)
    local = None
    if box is not None:
        arr = normal_region(shape, box, int(seed)).astype(dtype)
        if sbp.code == "P" and not first:
            arr = np.zeros_like(arr)
        local = EAGER_LOCAL.from_array(arr, dtype=dtype,
                                       device=EAGER_GLOBAL.device_for(placement))
    return EagerGlobalTensor._make(local, tuple(shape), np.dtype(dtype).name, placement, sbp)


__all__ = ["EAGER_GLOBAL", "EagerGlobalTensor", "global_full", "global_randn",
           "normal_region"]
