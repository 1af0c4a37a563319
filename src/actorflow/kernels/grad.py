"""Gradient rules by op type: one per op, registered beside its op definition.

A rule says how the gradient of an op's output flows to its inputs.  It is written with
functional ops, handed to it as ``F`` (``kernels`` imports nothing of the frontend), so one
rule serves every interpreter: on eager tensors the gradient ops are VM instructions like
any other (asynchronous); on lazy tensors they join the job being traced and the compiler
lowers them like the forward.  Their SBP is never written down: the compiler and the global
interpreter choose it from the same signatures as the forward's, so the gradient of a
broadcast weight read by split activations comes out partial-sum (``matmul`` of two
split-on-k operands), and data parallelism's all-reduce is ordinary P->B boxing.

    def _mul_grad(F, ctx, dy):
        a, b = ctx.inputs["a"], ctx.inputs["b"]
        return {"a": sum_to(F, F.mul(dy, b), a.shape), "b": sum_to(F, F.mul(dy, a), b.shape)}

    register_grad("mul", _mul_grad)

A rule returns a gradient for the inputs in ``ctx.needs`` (others may be left out or None).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from actorflow.errors import RegistryError
from actorflow.registry import Registry


@dataclass(frozen=True)
class GradContext:
    """What a rule may read: the forward's inputs, output and attrs, and which inputs
    want a gradient."""

    op_type: str
    inputs: Mapping[str, Any]
    out: Any
    attrs: Mapping[str, Any]
    needs: frozenset[str]


GradRule = Callable[[Any, GradContext, Any], Mapping[str, Any]]


def _load_builtin_ops() -> None:
    from actorflow.kernels import ops  # noqa: F401  (each op file registers its rules)


GRADS: Registry[GradRule] = Registry("gradient rule for op type", loader=_load_builtin_ops)


def register_grad(op_types: str | list[str], rule: GradRule) -> None:
    """The gradient rule of ``op_types``; a second rule for one type is refused."""
    for t in [op_types] if isinstance(op_types, str) else op_types:
        GRADS.register(t, rule)


def has_grad(op_type: str) -> bool:
    return op_type in GRADS


def get_grad(op_type: str) -> GradRule:
    try:
        return GRADS.get(op_type)
    except RegistryError:
        raise RegistryError(f"op type '{op_type}' has no gradient rule") from None


# -- helpers rules share ------------------------------------------------------------------
def sum_to(F: Any, g: Any, shape: tuple[int, ...]) -> Any:
    """``g`` summed down to ``shape`` (the inverse of broadcasting ``shape`` up to g's)."""
    shape = tuple(shape)
    if tuple(g.shape) == shape:
        return g
    lead = len(g.shape) - len(shape)
    axes = list(range(lead)) + [lead + i for i, n in enumerate(shape)
                                if n == 1 and g.shape[lead + i] != 1]
    if axes:
        g = F.sum(g, axes, False)
    if tuple(g.shape) != shape:
        g = F.reshape(g, list(shape))
    return g


def zeros_like(F: Any, x: Any) -> Any:
    return F.mul(x, 0.0)


__all__ = ["GRADS", "GradContext", "GradRule", "get_grad", "has_grad", "register_grad",
           "sum_to", "zeros_like"]
