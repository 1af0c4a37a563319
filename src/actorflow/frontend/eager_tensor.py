"""Eager tensors of the frontend: the VM's local tensor plus the shared operators.

Registers the eager local interpreter with the tensor class it wraps outputs in.
"""

from __future__ import annotations

from typing import Any

from actorflow.eager.core import set_tensor_type
from actorflow.eager.device import CPU
from actorflow.eager.env import get_vm
from actorflow.eager.interpreter import EagerLocalInterpreter
from actorflow.eager.tensor import LocalTensor
from actorflow.errors import UsageError
from actorflow.frontend import signature
from actorflow.frontend.dispatch import register_interpreter
from actorflow.frontend.size import Size
from actorflow.frontend.tensor import TensorMethods
from actorflow.kernels.dtype import DTYPES, DType


class EagerTensor(TensorMethods, LocalTensor):
    """A tensor with values on a device, computed asynchronously by the eager VM."""

    __slots__ = ("_ag",)

    def _swap_data(self, other: EagerTensor, any_device: bool = False) -> None:
        """Take ``other``'s value; ``other`` gets (and will release) this one's
        (``any_device``: also from another device, as ``Module.to`` moves parameters)."""
        if other._blob.device is not self._blob.device and not any_device:
            raise UsageError(f"cannot set a tensor on {self.device} to a value on "
                             f"{other.device}")
        self._blob, other._blob = other._blob, self._blob

    @property
    def shape(self) -> Size:
        return Size(self._blob.shape)

    @property
    def dtype(self) -> DType:
        return DTYPES[self._blob.dtype]


EAGER_LOCAL = register_interpreter("eager.local", EagerLocalInterpreter(EagerTensor))


def _plan_for(expr: Any, tensors: list[Any], attrs: dict[str, Any]) -> Any:
    """The issue plan the fast path caches (the inputs are on one device: they ran)."""
    device = tensors[0]._blob.device if tensors else CPU
    return EAGER_LOCAL.plan(get_vm(), expr, tensors, attrs, device)


set_tensor_type(EagerTensor)
signature._FAST_TENSOR[:] = [EagerTensor, _plan_for]
