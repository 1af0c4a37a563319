"""Autograd: one tape for eager and lazy tensors, gradient rules from ``kernels/grad.py``.

``mode`` (no_grad and friends), ``tape`` (what ops record), ``engine`` (``backward``),
``tensor_api`` (the tensor-side methods).  ``grad()`` computes gradients without touching
``.grad`` (``torch.autograd.grad``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from actorflow.errors import AutogradError
from actorflow.frontend.autograd.engine import run_backward
from actorflow.frontend.autograd.function import Function, FunctionCtx
from actorflow.frontend.autograd.mode import (
    enable_grad,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)


def _no_create_graph(where: str, create_graph: bool) -> None:
    if create_graph:  # docs/training.md: gradient rules do not record a tape of their own
        raise AutogradError(f"{where}(create_graph=True) (higher-order gradients) is not "
                            "supported")


def backward(tensors: Any, grad_tensors: Any = None, retain_graph: bool = False,
             create_graph: bool = False) -> None:
    """``tensors[i].backward(grad_tensors[i])`` for all at once (one walk of the tape)."""
    _no_create_graph("backward", create_graph)
    ts = list(tensors) if isinstance(tensors, (list, tuple)) else [tensors]
    gs = list(grad_tensors) if isinstance(grad_tensors, (list, tuple)) else [grad_tensors] * len(ts)
    run_backward(ts, gs, retain_graph)


def grad(outputs: Any, inputs: Sequence[Any] | Any, grad_outputs: Any = None,
         retain_graph: bool = False, create_graph: bool = False) -> tuple[Any, ...]:
    """The gradients of ``outputs`` with respect to ``inputs``, returned (``.grad`` untouched);
    an input the outputs do not depend on gets None."""
    _no_create_graph("grad", create_graph)
    outs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    ins = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    gs = (list(grad_outputs) if isinstance(grad_outputs, (list, tuple))
          else [grad_outputs] * len(outs))
    got = run_backward(outs, gs, retain_graph, capture=ins)
    assert got is not None
    return tuple(got)


__all__ = ["Function", "FunctionCtx", "backward", "enable_grad", "grad", "is_grad_enabled",
           "no_grad", "set_grad_enabled"]
