"""Eager local tensors, the data side: a blob object on a device, read back by waiting.

Operators and methods (``+``, ``relu()``, ...) are added by the frontend, which owns the
functional ops; this class knows only data: shape, dtype, device, ``numpy()``, ``to()``,
printing, and releasing its blob when it dies.  Values are immutable: ``numpy()`` of a
CPU tensor is a read-only view of the tensor's memory (no copy).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import numpy as np

from actorflow.eager.blob import BlobObject
from actorflow.eager.builder import InstructionsBuilder
from actorflow.eager.device import CPU, Device, as_device
from actorflow.eager.env import get_vm
from actorflow.eager.vm import VirtualMachine
from actorflow.errors import EagerKernelError

_PKG_DIR = __file__.rsplit("/", 2)[0] + "/"


class _PyTensorBase:
    """The data slots of an eager local tensor (Python core): its blob goes back to the VM
    when it dies.  The compiled core's ``TensorBase`` does the same without ``__del__``."""

    __slots__ = ("_blob", "_vm")
    _blob: Any
    _vm: Any

    def __del__(self) -> None:
        try:
            self._vm.release(self._blob)
        except Exception:  # interpreter teardown: modules may be half gone
            pass


def _tensor_base() -> Any:
    from actorflow import _core

    if _core.core_name() == "native":
        from actorflow._core._eager import TensorBase

        return TensorBase
    return _PyTensorBase


_INSIDE: dict[Any, bool] = {}  # code object -> is it actorflow's own code
_DEPTHS: dict[int, int] = {}  # start depth -> depth of the user frame found last time


class Where:
    """Where the user issued an op: the code object and the bytecode offset, turned into
    (file, line) only when read (an error, a trace).  ``f_lineno`` scans the code's line
    table (~0.5 us per op); the offset is free.  Indexes like the tuple it stands for."""

    __slots__ = ("code", "lasti")

    def __init__(self, code: Any, lasti: int) -> None:
        self.code = code
        self.lasti = lasti

    @property
    def line(self) -> int:
        for start, end, line in self.code.co_lines():
            if start <= self.lasti < end and line is not None:
                return line
        return self.code.co_firstlineno

    def __getitem__(self, i: int) -> Any:
        return (self.code.co_filename, self.line)[i]

    def __iter__(self) -> Any:
        return iter((self.code.co_filename, self.line))

    def __eq__(self, other: object) -> bool:
        return tuple(self) == (tuple(other) if isinstance(other, (tuple, Where)) else other)

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"{self.code.co_filename}:{self.line}"


def caller_where(depth: int = 2) -> Where | None:
    """The nearest frame outside actorflow (as a lazy :class:`Where`): where the user
    issued an op.

    Runs on every eager op, so it first tries the depth that answered last time for this
    starting depth: two C-level frame lookups (``sys._getframe``) and two dict hits check
    that the frame there is the user's and the one below it is actorflow's.  Only when
    the call path changed does it walk the frames one by one (each ``f_back`` makes a
    frame object, which is what made the walk cost ~3 us per op).  The quick check does
    not look at the frames between: a path that enters user code, goes back into
    actorflow and issues an op with the user frame at exactly the cached depth would name
    that outer user frame (a file:line for messages only, never for semantics).
    """
    inside = _INSIDE
    guess = _DEPTHS.get(depth)
    if guess is not None:
        try:
            f: Any = sys._getframe(guess)
            below = sys._getframe(guess - 1).f_code
        except ValueError:  # a shallower stack than last time
            pass
        else:
            code = f.f_code
            if inside.get(below) is True and inside.get(code) is False:
                return Where(code, f.f_lasti)
    f = sys._getframe(depth)
    d = depth
    while f is not None:
        code = f.f_code
        known = inside.get(code)
        if known is None:
            if len(inside) > 10_000:
                inside.clear()
            known = inside[code] = code.co_filename.startswith(_PKG_DIR)
        if not known:
            if d > depth:  # below it is actorflow's frame: remember where the user was
                _DEPTHS[depth] = d
            return Where(code, f.f_lasti)
        f = f.f_back
        d += 1
    return None


if TYPE_CHECKING:
    _Base = _PyTensorBase
else:
    _Base = _tensor_base()


class LocalTensor(_Base):
    __slots__ = ()
    _blob: BlobObject
    _vm: VirtualMachine
    interpreter = "eager.local"  # which interpreter runs ops on this kind of tensor
    __array_ufunc__ = None  # numpy defers to our operators instead of converting us

    @classmethod
    def _from_blob(cls, blob: BlobObject, vm: VirtualMachine) -> Any:
        t = cls.__new__(cls)
        t._blob = blob
        t._vm = vm
        return t

    # -- meta (known at once, no wait) --------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self._blob.shape

    @property
    def dtype(self) -> str:
        return self._blob.dtype

    @property
    def device(self) -> Device:
        return self._blob.device

    @property
    def ndim(self) -> int:
        return len(self._blob.shape)

    def __len__(self) -> int:
        if not self._blob.shape:
            raise TypeError("len() of a 0-d tensor")
        return self._blob.shape[0]

    # -- values (wait) --------------------------------------------------------------------
    def numpy(self, timeout: float | None = None) -> np.ndarray:
        """The values as a numpy array; waits for the kernels that compute them."""
        blob = self._blob
        if blob.device is CPU:  # the round trip's path: as few calls as can be
            vm = self._vm
            if vm._releases:
                vm.flush_releases()
            p = blob.producer
            if p is not None and not p.done:
                vm.wait(p, lambda: f"the value of a tensor {blob.shape} {blob.dtype} on cpu",
                        timeout)
            if vm.failures:
                vm.raise_failures()
            if blob.error is not None:
                raise _not_computed(blob.error)
            arr = blob.array.view()
            arr.flags.writeable = False
            return arr
        b = InstructionsBuilder(self._vm)
        host = b.copy(blob, CPU, caller_where())
        b.submit()
        try:
            return self._value(host, timeout)
        finally:
            self._vm.release(host)  # the host copy made for this read

    def _value(self, blob: BlobObject, timeout: float | None) -> np.ndarray:
        vm = self._vm
        vm.flush_releases()
        if blob.producer is not None and not blob.producer.done:
            vm.wait(blob.producer, lambda: f"the value of a tensor {blob.shape} {blob.dtype} "
                                           f"on {self._blob.device}", timeout)
        vm.raise_failures()
        if blob.error is not None:
            raise _not_computed(blob.error)
        arr = blob.array.view()
        arr.flags.writeable = False
        return arr

    def item(self) -> Any:
        return self.numpy().item()

    def __float__(self) -> float:
        return float(self.numpy().item())

    def __int__(self) -> int:
        return int(self.numpy().item())

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def to(self, device: Any) -> Any:
        """This tensor on ``device`` (copy instructions; the same tensor if already there)."""
        dev = as_device(device)
        if dev is self._blob.device:
            return self
        b = InstructionsBuilder(self._vm)
        out = b.copy(self._blob, dev, caller_where())
        b.submit()
        return type(self)._from_blob(out, self._vm)

    def cpu(self) -> Any:
        return self.to(CPU)

    def __repr__(self) -> str:
        body = np.array2string(self.numpy(), separator=", ", prefix="tensor(")
        extra = "" if self._blob.dtype in ("float32", "int64") else f", dtype={self.dtype}"
        dev = "" if self._blob.device is CPU else f", device='{self.device}'"
        return f"tensor({body}{extra}{dev})"

    __str__ = __repr__

    def __bool__(self) -> bool:
        return bool(self.numpy())

    def __reduce__(self) -> Any:
        raise TypeError("eager tensors are not picklable; save t.numpy() instead")


def _not_computed(root: Exception) -> EagerKernelError:
    if isinstance(root, EagerKernelError):
        e = EagerKernelError(root.op_name, root.where, root.error, root.stream,
                             root.traceback_text)
        e.args = (f"this tensor has no value: {root.args[0]}",)
        return e
    return EagerKernelError("?", "?", str(root))


__all__ = ["LocalTensor", "Where", "as_device", "caller_where", "get_vm"]
