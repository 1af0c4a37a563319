"""Tensors of the frontend: lazy ones (names of op outputs in a job being traced, with
logical shape and dtype) and eager ones (``eager_tensor.py``, data on a device).

Operators and methods live once in ``TensorMethods`` and route through
``actorflow.functional`` (``x + y`` is ``F.add(x, y)``), so operators and functions share
one set of signatures, conversions and errors, for both kinds of tensor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn

from actorflow.frontend import functional as F
from actorflow.frontend import functional_nn as FN
from actorflow.frontend.autograd.tensor_api import AutogradMethods
from actorflow.frontend.namespace import set_method_owner
from actorflow.frontend.placement import Placement
from actorflow.frontend.sbp import SbpParallel
from actorflow.frontend.signature import set_tensor_types
from actorflow.frontend.size import Size
from actorflow.frontend.tensor_api import OneFlowTensorAPI
from actorflow.kernels.dtype import as_dtype

if TYPE_CHECKING:
    from actorflow.frontend.job import Job


class TensorMethods(OneFlowTensorAPI, AutogradMethods):
    """Operators and methods shared by lazy and eager tensors (all through functional).

    ``af.Tensor`` is this class: every tensor is an instance, and calling it makes one
    (``tensor_api.py``)."""

    __slots__ = ()
    _user_constructor = True  # TensorMethods(...) is af.Tensor(...); subclasses construct

    # -- operators (all through functional) ------------------------------------------------
    def __add__(self, o: Any) -> Tensor:
        return F.add(self, o)

    def __radd__(self, o: Any) -> Tensor:
        return F.add(o, self)

    def __sub__(self, o: Any) -> Tensor:
        return F.sub(self, o)

    def __rsub__(self, o: Any) -> Tensor:
        return F.sub(o, self)

    def __mul__(self, o: Any) -> Tensor:
        return F.mul(self, o)

    def __rmul__(self, o: Any) -> Tensor:
        return F.mul(o, self)

    def __truediv__(self, o: Any) -> Tensor:
        return F.div(self, o)

    def __rtruediv__(self, o: Any) -> Tensor:
        return F.div(o, self)

    def __pow__(self, o: Any) -> Tensor:
        return F.pow(self, o)

    def __rpow__(self, o: Any) -> Tensor:
        return F.pow(o, self)

    def __matmul__(self, o: Any) -> Tensor:
        return F.matmul(self, o)

    def __rmatmul__(self, o: Any) -> Tensor:
        return F.matmul(o, self)

    def __neg__(self) -> Tensor:
        return F.neg(self)

    def __abs__(self) -> Tensor:
        return FN.abs(self)

    def __lt__(self, o: Any) -> Tensor:
        return FN.lt(self, o)

    def __le__(self, o: Any) -> Tensor:
        return FN.le(self, o)

    def __gt__(self, o: Any) -> Tensor:
        return FN.gt(self, o)

    def __ge__(self, o: Any) -> Tensor:
        return FN.ge(self, o)

    def __getitem__(self, index: Any) -> Tensor:
        return FN.getitem(self, index)

    # -- methods -----------------------------------------------------------------------------
    def relu(self) -> Tensor:
        return F.relu(self)

    def exp(self) -> Tensor:
        return F.exp(self)

    def softmax(self, dim: int = -1) -> Tensor:
        return F.softmax(self, dim)

    def sum(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        return F.sum(self, dim, keepdim)

    def mean(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        return F.mean(self, dim, keepdim)

    def reshape(self, *shape: Any) -> Tensor:
        return F.reshape(self, shape[0] if len(shape) == 1 else list(shape))

    def transpose(self, *perm: Any) -> Tensor:
        if len(perm) == 2 and all(isinstance(p, int) for p in perm):
            return F.transpose(self, *perm)
        return F.transpose(self, perm[0] if len(perm) == 1 else (list(perm) or None))

    @property
    def T(self) -> Tensor:
        return F.transpose(self)

    def cast(self, dtype: Any) -> Tensor:
        return F.cast(self, dtype)

    def to_global(self, placement: Placement | None = None, sbp: Any = None) -> Tensor:
        return F.to_global(self, placement, sbp)


class Tensor(TensorMethods):
    """The output of one op of a job; knows its logical shape, dtype and placement."""

    __slots__ = ("_ag", "dtype", "job", "name", "placement", "sbp", "shape")
    interpreter = "lazy"  # which interpreter runs ops on this kind of tensor

    def __init__(self, job: Job, name: str, shape: tuple[int, ...], dtype: str,
                 placement: Placement, sbp: SbpParallel | None = None) -> None:
        self.job = job
        self.name = name
        self.shape = Size(shape)
        self.dtype = as_dtype(dtype)
        self.placement = placement
        self.sbp = sbp  # fixed by the job (inputs, variables, to_global); else the compiler's

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        sbp = f", sbp={self.sbp!r}" if self.sbp is not None else ""
        return (f"Tensor(name={self.name!r}, shape={self.shape}, dtype={self.dtype}, "
                f"placement={self.placement!r}{sbp})")

    def __bool__(self) -> bool:
        raise TypeError("a lazy tensor has no truth value while the job is traced")

    def __reduce__(self) -> NoReturn:
        raise TypeError("lazy tensors are not picklable")


def is_tensor(obj: Any) -> bool:
    """Whether ``obj`` is an actorflow tensor (lazy, eager local or eager global)."""
    return isinstance(obj, TensorMethods)


set_tensor_types(TensorMethods)  # functional's signatures accept these (imports stay one-way)
set_method_owner(TensorMethods)  # ops declared so far (and later) become tensor methods
