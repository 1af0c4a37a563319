"""Eager tensors of the frontend: the VM's local tensor plus the shared operators.

Registers the eager local interpreter with the tensor class it wraps outputs in.
"""

from __future__ import annotations

from actorflow.eager.interpreter import EagerLocalInterpreter
from actorflow.eager.tensor import LocalTensor
from actorflow.frontend.dispatch import register_interpreter
from actorflow.frontend.size import Size
from actorflow.frontend.tensor import TensorMethods
from actorflow.kernels.dtype import DTYPES, DType


class EagerTensor(TensorMethods, LocalTensor):
    """A tensor with values on a device, computed asynchronously by the eager VM."""

    __slots__ = ()

    @property
    def shape(self) -> Size:
        return Size(self._blob.shape)

    @property
    def dtype(self) -> DType:
        return DTYPES[self._blob.dtype]


EAGER_LOCAL = register_interpreter("eager.local", EagerLocalInterpreter(EagerTensor))
