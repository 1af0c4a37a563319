"""The emulated device: an array module with CuPy's rules, backed by numpy.

Use it as ``xp`` where CuPy would go (``ACTORFLOW_DEVICE=emulated`` makes every ``cuda:i``
memory case use it).  It keeps CuPy's rules so code that passes here does not break on a
GPU: device arrays never turn into host arrays implicitly (``array.py``), copies are
explicit (``asarray``, ``asnumpy``, ``.set``, ``.get``), and ``xp.cuda`` has devices,
streams with their own device thread, events, pinned memory (``cuda.py``).  Every other
numpy function is available under the device's rules: device arrays in, device arrays
out, host arrays refused.  Submodules (``random``, ``linalg``, ``fft``) are not: draw
random numbers on the host and copy them over, as actorflow's kernels do.
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np

from actorflow.streams.emulated import cuda
from actorflow.streams.emulated.array import (
    IMPLICIT,
    MUTATING_FUNCTIONS,
    PURE,
    VALUE_SHAPED,
    call,
    ndarray,
    wrap,
)
from actorflow.streams.emulated.cuda import current_device, wait_current_stream

__all__ = ["IMPLICIT", "array", "asarray", "asnumpy", "cuda", "get_array_module", "ndarray"]


def asarray(a: Any, dtype: Any = None, order: Any = None) -> ndarray:
    """Host -> device (an explicit copy); a device array passes through (cast if asked)."""
    if type(a) is ndarray:
        if a._device != current_device():  # a copy between devices (CUDA's peer copy)
            wait_current_stream()
            return ndarray._of(np.array(a._a, dtype=dtype, order=order or "K", copy=True),
                               current_device())
        return a if dtype is None or a.dtype == np.dtype(dtype) else a.astype(dtype)
    wait_current_stream()
    return ndarray._of(np.array(a, dtype=dtype, order=order or "K", copy=True),
                       current_device())


def array(a: Any, dtype: Any = None, copy: bool = True, order: Any = None) -> ndarray:
    if type(a) is ndarray:
        return a.astype(dtype or a.dtype, copy=copy)
    return asarray(a, dtype, order)


def asnumpy(a: Any, stream: Any = None, out: np.ndarray | None = None) -> Any:
    """Device -> host (an explicit copy); host values pass through."""
    if type(a) is ndarray:
        return a.get(stream=stream, out=out)
    return np.asarray(a)


def get_array_module(*args: Any) -> Any:
    import sys

    return sys.modules[__name__] if any(type(a) is ndarray for a in args) else np


_cache: dict[str, Any] = {}
_NO_SUBMODULE = ("random", "linalg", "fft", "testing", "lib", "ma", "polynomial")


def __getattr__(name: str) -> Any:
    """Any other numpy name, under the device's rules (functions wrapped, types as is)."""
    fn = _cache.get(name)
    if fn is not None:
        return fn
    if name in _NO_SUBMODULE or name.startswith("_"):
        raise AttributeError(f"the emulated device has no xp.{name}: compute on the host with "
                             "numpy and copy with xp.asarray")
    obj = getattr(np, name)  # AttributeError for names numpy lacks too
    if isinstance(obj, types.ModuleType):
        raise AttributeError(f"the emulated device has no xp.{name} submodule")
    if isinstance(obj, (type, np.dtype)) or not callable(obj):
        return obj if isinstance(obj, (type, np.dtype, str, int, float)) else wrap(obj, 0)

    result = None if name in MUTATING_FUNCTIONS else PURE
    value_shaped = name in VALUE_SHAPED

    def device_fn(*args: Any, **kwargs: Any) -> Any:
        return call(obj, args, kwargs, result, value_shaped)

    device_fn.__name__ = name
    device_fn.__doc__ = f"numpy.{name} on the emulated device"
    _cache[name] = device_fn
    return device_fn
