"""The emulated device's array: numpy inside, CuPy's rules outside.

Data lives in a numpy array (``_a``), but the array refuses every implicit host<->device
conversion CuPy refuses: ``numpy.asarray(dev)`` / ``__array__``, a numpy array written
into a device array (``dev[...] = host``), a device array written into numpy
(``host[...] = dev``), mixing numpy arrays into device ops, and numpy ufuncs on device
arrays.  It is stricter than CuPy in one place: ``float(dev)``, ``int(dev)``,
``bool(dev)`` are refused too (CuPy allows them on one-element arrays as a hidden copy
and device sync; a kernel should say ``.item()`` or ``.get()``).  Explicit copies are
``xp.asarray(host)``, ``dev.set(host)``, ``dev.get()`` and ``xp.asnumpy(dev)``.
Reductions return 0-d device arrays, as CuPy's do.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

IMPLICIT = ("Implicit conversion to a NumPy array is not allowed. Please use `.get()` to "
            "construct a NumPy array explicitly.")


def _unsupported(x: Any) -> TypeError:
    return TypeError(f"Unsupported type {type(x)} (emulated device: copy host arrays to the "
                     "device with xp.asarray first)")


def unwrap(x: Any) -> Any:
    """Device arrays -> their numpy data; host scalars pass; numpy arrays are refused."""
    if type(x) is ndarray:
        return x._a
    if isinstance(x, np.ndarray):
        if x.ndim == 0:
            return x  # CuPy takes 0-d numpy arrays as scalars
        raise _unsupported(x)
    if isinstance(x, (list, tuple)):
        return type(x)(unwrap(v) for v in x)
    return x


def wrap(x: Any, device: int) -> Any:
    if isinstance(x, np.ndarray):
        return ndarray._of(x, device)
    if isinstance(x, np.generic):
        return ndarray._of(np.asarray(x), device)
    if isinstance(x, tuple):
        return tuple(wrap(v, device) for v in x)
    if isinstance(x, list):
        return [wrap(v, device) for v in x]
    return x


def operands(args: Any, kwargs: dict) -> list[ndarray]:
    """The device arrays among a call's arguments (one level into lists and tuples)."""
    found = []
    for v in (*args, *kwargs.values()):
        if type(v) is ndarray:
            found.append(v)
        elif isinstance(v, (list, tuple)):
            found.extend(w for w in v if type(w) is ndarray)
    return found


PURE = object()  # call(result=PURE): the kernel makes its result (it writes no operand)
# array methods and numpy functions that write into an operand (their result: None)
MUTATING_METHODS = frozenset({"fill", "sort", "partition", "put", "itemset", "resize",
                              "byteswap", "setflags", "setfield"})
MUTATING_FUNCTIONS = frozenset({"copyto", "put", "place", "putmask", "fill_diagonal",
                                "put_along_axis"})
# functions whose result's shape depends on the values: CuPy synchronizes for them
VALUE_SHAPED = frozenset({"nonzero", "flatnonzero", "argwhere", "unique", "compress",
                          "extract"})


def call(fn: Callable[..., Any], args: tuple, kwargs: dict, result: Any = PURE,
         value_shaped: bool = False) -> Any:
    """Run a numpy function as a kernel of the current device, under the device's rules:
    every operand lives on the current device, and on a stream the kernel runs on that
    stream's thread (``cuda.launch``).  ``result``: what a kernel that writes into an
    operand returns (``out=`` is found here); ``value_shaped``: the result's shape depends
    on the values (the caller waits for the stream)."""
    from actorflow.streams.emulated.cuda import current_device, launch

    device = current_device()
    ops = operands(args, kwargs)
    for v in ops:
        if v._device != device:
            raise ValueError(
                f"The device where the array resides ({v._device}) is different from the "
                f"current device ({device}) (emulated device: a kernel reads and writes "
                "the current device's memory only; make the array's device current, or "
                "copy it over with xp.asarray under the current device)")
    out = kwargs.get("out")
    if result is PURE and (type(out) is ndarray or (
            isinstance(out, tuple) and out and all(type(o) is ndarray for o in out))):
        result = out
    return launch(fn, unwrap(args), {k: unwrap(v) for k, v in kwargs.items()}, ops, device,
                  result, value_shaped)


def _binary(op: Callable[[Any, Any], Any]) -> Callable[[ndarray, Any], Any]:
    def method(self: ndarray, other: Any) -> Any:
        return call(op, (self, other), {})
    return method


def _rbinary(op: Callable[[Any, Any], Any]) -> Callable[[ndarray, Any], Any]:
    def method(self: ndarray, other: Any) -> Any:
        return call(op, (other, self), {})
    return method


def _inplace(op: Callable[[Any, Any], Any]) -> Callable[[ndarray, Any], Any]:
    def method(self: ndarray, other: Any) -> ndarray:
        return call(op, (self, other), {}, result=self)
    return method


class ndarray:
    """An array on the emulated device (see the module docstring for its rules)."""

    __slots__ = ("_a", "_device")
    __array_ufunc__ = None  # numpy ufuncs refuse device arrays, as with CuPy
    __array_priority__ = 100

    def __init__(self, shape: Any, dtype: Any = float) -> None:
        from actorflow.streams.emulated.cuda import current_device

        self._a = np.empty(shape, dtype)
        self._device = current_device()

    @classmethod
    def _of(cls, a: np.ndarray, device: int) -> ndarray:
        obj = object.__new__(cls)
        obj._a = a
        obj._device = device
        return obj

    # -- the refusals --------------------------------------------------------------------
    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(IMPLICIT)

    def _implicit(self, what: str) -> TypeError:
        return TypeError(f"emulated device: {what}(device array) is an implicit device->host "
                         "copy and sync; use .item() or .get() explicitly")

    def __float__(self) -> float:
        raise self._implicit("float")

    def __int__(self) -> int:
        raise self._implicit("int")

    def __index__(self) -> int:
        raise self._implicit("operator.index")

    def __complex__(self) -> complex:
        raise self._implicit("complex")

    def __bool__(self) -> bool:
        raise self._implicit("bool")

    def __buffer__(self, flags: int) -> memoryview:
        raise TypeError(IMPLICIT)

    # -- meta ------------------------------------------------------------------------------
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    nbytes = property(lambda self: self._a.nbytes)
    itemsize = property(lambda self: self._a.itemsize)
    strides = property(lambda self: self._a.strides)
    T = property(lambda self: ndarray._of(self._a.T, self._device))

    @property
    def device(self) -> Any:
        from actorflow.streams.emulated.cuda import Device

        return Device(self._device)

    def __len__(self) -> int:
        return len(self._a)

    def __repr__(self) -> str:
        return f"emulated.ndarray(shape={self.shape}, dtype={self.dtype}, device={self._device})"

    # -- explicit copies -------------------------------------------------------------------
    def get(self, stream: Any = None, order: Any = "C", out: np.ndarray | None = None,
            blocking: bool = True) -> Any:
        """Device -> host.  Into a pinned ``out`` on a stream with ``blocking=False``: queued
        on that stream (the copy happens on the device thread, later), as on CuPy >= 13;
        otherwise now, in stream order."""
        from actorflow.streams.emulated.cuda import copy_on_stream, wait_current_stream

        if out is not None:
            if not isinstance(out, np.ndarray) or out.shape != self.shape:
                raise ValueError(f"get(out=...) needs a numpy array of shape {self.shape}")
            copy_on_stream(stream, out, self._a, pinned_host=out)
            if blocking:
                wait_current_stream(stream)
            return out
        wait_current_stream(stream)
        return self._a.copy(order=order)

    def set(self, arr: np.ndarray, stream: Any = None) -> None:
        """Host -> device; from pinned memory on a stream the copy is queued (async)."""
        from actorflow.streams.emulated.cuda import copy_on_stream

        if not isinstance(arr, np.ndarray):
            raise TypeError(f"set() takes a numpy.ndarray, got {type(arr)}")
        if arr.shape != self.shape:
            raise ValueError(f"shape mismatch: set() of {arr.shape} into {self.shape}")
        copy_on_stream(stream, self._a, arr, pinned_host=arr)

    def item(self) -> Any:
        return call(np.ndarray.item, (self,), {})

    def tolist(self) -> Any:
        return call(lambda a: a.tolist(), (self,), {})

    # -- indexing --------------------------------------------------------------------------
    def __getitem__(self, idx: Any) -> ndarray:
        # basic indexing is a view (no kernel); advanced indexing gathers (a kernel), and a
        # boolean mask makes a result whose shape depends on the values
        masks = [i for i in (idx if isinstance(idx, tuple) else (idx,))
                 if getattr(i, "dtype", None) == np.bool_ and getattr(i, "ndim", 0)]
        return call(operator.getitem, (self, idx), {},
                    value_shaped=bool(masks))

    def __setitem__(self, idx: Any, value: Any) -> None:
        if isinstance(value, np.ndarray) and value.ndim > 0:
            raise ValueError("non-scalar numpy.ndarray cannot be used for fill")
        call(operator.setitem, (self, idx, value), {}, result=None)

    def __iter__(self) -> Any:
        return (ndarray._of(a, self._device) if isinstance(a, np.ndarray) else wrap(a, 0)
                for a in self._a)

    # -- everything else a numpy array has, under the device's rules ------------------------
    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        attr = getattr(self._a, name)
        if not callable(attr):
            return wrap(attr, self._device)

        def method(*args: Any, **kwargs: Any) -> Any:
            return call(getattr(np.ndarray, name), (self, *args), kwargs,
                        result=None if name in MUTATING_METHODS else PURE,
                        value_shaped=name in VALUE_SHAPED)
        return method

    def copy(self, order: str = "C") -> ndarray:
        return call(np.copy, (self,), {"order": order})

    def astype(self, dtype: Any, copy: bool = True) -> ndarray:
        return call(np.ndarray.astype, (self, dtype), {"copy": copy})

    __add__, __radd__, __iadd__ = _binary(operator.add), _rbinary(operator.add), _inplace(
        operator.iadd)
    __sub__, __rsub__, __isub__ = _binary(operator.sub), _rbinary(operator.sub), _inplace(
        operator.isub)
    __mul__, __rmul__, __imul__ = _binary(operator.mul), _rbinary(operator.mul), _inplace(
        operator.imul)
    __truediv__, __rtruediv__, __itruediv__ = (_binary(operator.truediv),
                                               _rbinary(operator.truediv),
                                               _inplace(operator.itruediv))
    __floordiv__, __rfloordiv__ = _binary(operator.floordiv), _rbinary(operator.floordiv)
    __mod__, __rmod__ = _binary(operator.mod), _rbinary(operator.mod)
    __pow__, __rpow__, __ipow__ = _binary(operator.pow), _rbinary(operator.pow), _inplace(
        operator.ipow)
    __matmul__, __rmatmul__ = _binary(operator.matmul), _rbinary(operator.matmul)
    __and__, __rand__ = _binary(operator.and_), _rbinary(operator.and_)
    __or__, __ror__ = _binary(operator.or_), _rbinary(operator.or_)
    __xor__, __rxor__ = _binary(operator.xor), _rbinary(operator.xor)
    __lt__, __le__ = _binary(operator.lt), _binary(operator.le)
    __gt__, __ge__ = _binary(operator.gt), _binary(operator.ge)
    __eq__, __ne__ = _binary(operator.eq), _binary(operator.ne)
    __hash__ = None  # type: ignore[assignment]

    def __neg__(self) -> ndarray:
        return call(operator.neg, (self,), {})

    def __pos__(self) -> ndarray:
        return call(operator.pos, (self,), {})

    def __abs__(self) -> ndarray:
        return call(operator.abs, (self,), {})

    def __invert__(self) -> ndarray:
        return call(operator.invert, (self,), {})
