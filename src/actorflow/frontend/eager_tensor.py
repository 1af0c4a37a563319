"""Eager tensors of the frontend: the VM's local tensor plus the shared operators.

Registers the eager local interpreter with the tensor class it wraps outputs in.
"""

from __future__ import annotations

from actorflow.eager.interpreter import EagerLocalInterpreter
from actorflow.eager.tensor import LocalTensor
from actorflow.frontend.dispatch import register_interpreter
from actorflow.frontend.tensor import TensorMethods


class EagerTensor(TensorMethods, LocalTensor):
    """A tensor with values on a device, computed asynchronously by the eager VM."""

    __slots__ = ()


EAGER_LOCAL = register_interpreter("eager.local", EagerLocalInterpreter(EagerTensor))
