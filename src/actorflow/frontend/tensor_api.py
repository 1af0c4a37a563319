"""OneFlow's tensor API on every actorflow tensor: ``af.Tensor(...)``, casts by name
(``x.long()``), ``numel``/``size``/``dim``, ``tolist``, ``permute``/``view``/``t``,
``to_local`` and ``is_global``.

``TensorMethods`` (``tensor.py``) inherits this mixin, so lazy, eager local and eager
global tensors all have it, and ``isinstance(x, af.Tensor)`` holds for each (``af.Tensor``
is ``TensorMethods``).  Calling ``af.Tensor(...)`` itself builds an eager tensor as
OneFlow's ``flow.Tensor`` does (float32 data, or a shape; ``placement=``/``sbp=`` make a
global one); the metaclass routes that call, subclasses construct as usual.
"""

from __future__ import annotations

import math
from typing import Any

from actorflow.frontend.size import Size
from actorflow.kernels.dtype import as_dtype


class TensorMeta(type):
    """``af.Tensor(...)`` makes a tensor; ``SomeTensorSubclass(...)`` is an ordinary call."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if cls.__dict__.get("_user_constructor"):
            from actorflow.frontend.creation import Tensor_ctor

            return Tensor_ctor(*args, **kwargs)
        return super().__call__(*args, **kwargs)

    def __instancecheck__(cls, obj: Any) -> bool:
        return type.__instancecheck__(cls, obj)


def _cast(dtype: str, name: str) -> Any:
    def method(self: Any) -> Any:
        return self if self.dtype == dtype else self.cast(dtype)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"This tensor as {dtype} (``x.{name}()`` is ``x.to({dtype})``)."
    return method


def _dtype_or_none(value: Any) -> Any:
    try:
        return as_dtype(value)
    except TypeError:
        return None


class OneFlowTensorAPI(metaclass=TensorMeta):
    """The methods OneFlow's ``Tensor`` has that are not functional ops of their own."""

    __slots__ = ()

    # -- meta -------------------------------------------------------------------------------
    def numel(self) -> int:
        """The number of elements."""
        return math.prod(self.shape)  # type: ignore[attr-defined]

    nelement = numel

    def size(self, dim: int | None = None) -> Any:
        """The shape (an ``af.Size``), or the length of axis ``dim``."""
        shape = self.shape  # type: ignore[attr-defined]
        if dim is None:
            return Size(shape)
        n = len(shape)
        if not -max(n, 1) <= dim < max(n, 1):
            from actorflow.errors import DimensionError

            raise DimensionError(f"Dimension out of range (expected to be in range of "
                                 f"[{-max(n, 1)}, {max(n, 1) - 1}], but got {dim})")
        return shape[dim] if n else 1

    def dim(self) -> int:
        return len(self.shape)  # type: ignore[attr-defined]

    ndimension = dim

    def element_size(self) -> int:
        return as_dtype(self.dtype).itemsize  # type: ignore[attr-defined]

    def is_floating_point(self) -> bool:
        return as_dtype(self.dtype).is_floating_point  # type: ignore[attr-defined]

    @property
    def is_global(self) -> bool:
        return self.interpreter == "eager.global"  # type: ignore[attr-defined]

    @property
    def is_local(self) -> bool:
        return self.interpreter == "eager.local"  # type: ignore[attr-defined]

    @property
    def is_lazy(self) -> bool:
        return self.interpreter == "lazy"  # type: ignore[attr-defined]

    # -- values -------------------------------------------------------------------------------
    def tolist(self) -> Any:
        """The values as nested Python lists (waits, like ``numpy()``)."""
        return self.numpy().tolist()  # type: ignore[attr-defined]

    def to(self, *args: Any, **kwargs: Any) -> Any:
        """``x.to(device)``, ``x.to(dtype)``, ``x.to(device, dtype)`` (or ``device=``/``dtype=``),
        as OneFlow's: a copy to the device (the tensor's own ``to``) and/or a cast."""
        dtype, device = kwargs.pop("dtype", None), kwargs.pop("device", None)
        if kwargs:
            from actorflow.errors import ArgumentTypeError

            raise ArgumentTypeError(f"to(): unexpected keyword arguments {sorted(kwargs)}")
        for a in args:
            d = _dtype_or_none(a)
            if d is not None:
                dtype = d
            else:
                device = a
        t = self
        if device is not None:
            t = super().to(device)  # type: ignore[misc]
        return t if dtype is None or t.dtype == as_dtype(dtype) else t.cast(dtype)  # type: ignore[attr-defined]

    def to_local(self) -> Any:
        """A local tensor is its own local part (OneFlow raises here; see docs/oneflow.md)."""
        return self

    def __iter__(self) -> Any:
        shape = self.shape  # type: ignore[attr-defined]
        if not shape:
            raise TypeError("iteration over a 0-d tensor")
        for i in range(shape[0]):
            yield self[i]  # type: ignore[index]

    # -- layout -------------------------------------------------------------------------------
    def permute(self, *dims: Any) -> Any:
        """The axes in the order ``dims`` (``x.permute(1, 0)`` or ``x.permute([1, 0])``)."""
        from actorflow.frontend import functional as F

        return F.permute(self, dims[0] if len(dims) == 1 and not isinstance(dims[0], int)
                         else list(dims))

    def expand(self, *sizes: Any) -> Any:
        """Broadcast to ``sizes`` (``x.expand(2, 3)`` or ``x.expand([2, 3])``; -1 keeps an axis)."""
        from actorflow.frontend import functional_nn as F

        return F.expand(self, sizes[0] if len(sizes) == 1 and not isinstance(sizes[0], int)
                        else list(sizes))

    def view(self, *shape: Any) -> Any:
        """``reshape`` (tensors are immutable, so a view and a copy cannot be told apart)."""
        return self.reshape(*shape)  # type: ignore[attr-defined]

    def view_as(self, other: Any) -> Any:
        return self.reshape(list(other.shape))  # type: ignore[attr-defined]

    reshape_as = view_as

    def t(self) -> Any:
        """The transpose of a tensor of rank <= 2."""
        if len(self.shape) > 2:  # type: ignore[attr-defined]
            from actorflow.errors import UsageError

            raise UsageError(f"t() expects a tensor with <= 2 dimensions, but self is "
                             f"{len(self.shape)}D")  # type: ignore[attr-defined]
        return self if len(self.shape) < 2 else self.transpose(0, 1)  # type: ignore[attr-defined]


# casts by name: x.long() is x.cast(int64), as in OneFlow (set after the class body, where
# names like ``int`` and ``float`` would shadow the builtins)
CASTS = {"long": "int64", "int": "int32", "float": "float32", "double": "float64",
         "half": "float16", "bool": "bool", "byte": "uint8", "char": "int8"}
for _name, _dtype in CASTS.items():
    setattr(OneFlowTensorAPI, _name, _cast(_dtype, _name))

__all__ = ["CASTS", "OneFlowTensorAPI", "TensorMeta"]
