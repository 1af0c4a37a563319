"""Eager local tensors, the data side: a blob object on a device, read back by waiting.

Operators and methods (``+``, ``relu()``, ...) are added by the frontend, which owns the
functional ops; this class knows only data: shape, dtype, device, ``numpy()``, ``to()``,
printing, and releasing its blob when it dies.  Values are immutable: ``numpy()`` of a
CPU tensor is a read-only view of the tensor's memory (no copy).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from actorflow.eager.blob import BlobObject
from actorflow.eager.builder import InstructionsBuilder
from actorflow.eager.device import CPU, Device, as_device
from actorflow.eager.env import get_vm
from actorflow.eager.vm import VirtualMachine
from actorflow.errors import EagerKernelError

_PKG_DIR = __file__.rsplit("/", 2)[0] + "/"


_INSIDE: dict[Any, bool] = {}  # code object -> is it actorflow's own code


def caller_where(depth: int = 2) -> tuple[str, int] | None:
    """(file, line) of the nearest frame outside actorflow: where the user issued an op."""
    f: Any = sys._getframe(depth)
    inside = _INSIDE
    while f is not None:
        code = f.f_code
        known = inside.get(code)
        if known is None:
            if len(inside) > 10_000:
                inside.clear()
            known = inside[code] = code.co_filename.startswith(_PKG_DIR)
        if not known:
            return (code.co_filename, f.f_lineno)
        f = f.f_back
    return None


class LocalTensor:
    __slots__ = ("_blob", "_vm")
    _blob: BlobObject
    _vm: VirtualMachine
    interpreter = "eager.local"  # which interpreter runs ops on this kind of tensor
    __array_ufunc__ = None  # numpy defers to our operators instead of converting us

    @classmethod
    def _from_blob(cls, blob: BlobObject, vm: VirtualMachine) -> Any:
        t = object.__new__(cls)
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
        if blob.device.type != "cpu":
            b = InstructionsBuilder(self._vm)
            blob = b.copy(blob, CPU, caller_where())
            b.submit()
        try:
            return self._value(blob, timeout)
        finally:
            if blob is not self._blob:  # the host copy made for this read
                self._vm.release(blob)

    def _value(self, blob: BlobObject, timeout: float | None) -> np.ndarray:
        vm = self._vm
        vm.flush_releases()
        if blob.producer is not None:
            vm.wait(blob.producer, f"the value of a tensor {blob.shape} {blob.dtype} on "
                                   f"{self._blob.device}", timeout)
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

    def __del__(self) -> None:
        try:
            self._vm.release(self._blob)
        except Exception:  # interpreter teardown: modules may be half gone
            pass


def _not_computed(root: Exception) -> EagerKernelError:
    if isinstance(root, EagerKernelError):
        e = EagerKernelError(root.op_name, root.where, root.error, root.stream,
                             root.traceback_text)
        e.args = (f"this tensor has no value: {root.args[0]}",)
        return e
    return EagerKernelError("?", "?", str(root))


def new_blob(shape: tuple[int, ...], dtype: str, device: Device) -> BlobObject:
    return BlobObject(shape, dtype, device)


__all__ = ["LocalTensor", "as_device", "caller_where", "get_vm"]
