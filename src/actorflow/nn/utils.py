"""``nn.utils``: gradient clipping (OneFlow's ``clip_grad_norm_``/``clip_grad_value_``).
Eagerly they rescale each parameter's ``.grad``; while a job is traced they rescale the
gradients of the job's variables for the parameters, which the optimizer's ``step()``
then reads, so the same training loop clips in both modes."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from actorflow.errors import UsageError
from actorflow.frontend import functional_nn as F
from actorflow.frontend.autograd.mode import no_grad
from actorflow.frontend.job import tracing
from actorflow.nn.parameter import variables_of


def _with_grads(parameters: Any) -> list[Any]:
    """The tensors whose ``.grad`` to clip: the parameters, or their variables in a job."""
    ps = [parameters] if hasattr(parameters, "shape") else list(parameters)
    job = tracing()
    if job is not None:
        table = variables_of(job)
        ps = [p if getattr(p, "interpreter", "") == "lazy" else table.get(id(p)) for p in ps]
    return [p for p in ps if p is not None and p.grad is not None]


def clip_grad_norm_(parameters: Iterable[Any] | Any, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False) -> Any:
    """Scale the gradients so that their joint ``norm_type``-norm is at most ``max_norm``
    (by ``max_norm / (norm + 1e-6)`` when larger); returns the norm before clipping."""
    ps = _with_grads(parameters)
    if not ps:  # nothing to clip: a norm of 0, as OneFlow returns
        from actorflow.frontend.creation import tensor

        return tensor(0.0)
    with no_grad():
        if math.isinf(norm_type):
            parts = [F.amax(F.abs(p.grad)) for p in ps]
            total = parts[0]
            for t in parts[1:]:
                total = F.maximum(total, t)
        else:
            sums = [F.sum(F.abs(p.grad) ** float(norm_type)) for p in ps]
            acc: Any = sums[0]
            for s in sums[1:]:
                acc = acc + s
            total = acc ** (1.0 / float(norm_type))
        if error_if_nonfinite:
            value = float(total.numpy()) if total.interpreter != "lazy" else 0.0
            if not math.isfinite(value):
                raise UsageError(f"clip_grad_norm_(): the total norm of order {norm_type} of the "
                                 "gradients is non-finite, so it cannot be clipped")
        coef = F.clip(float(max_norm) / (total + 1e-6), None, 1.0)
        for p in ps:
            p.grad = p.grad * F.cast(coef, p.grad.dtype)
    return total


def clip_grad_value_(parameters: Iterable[Any] | Any, clip_value: float) -> None:
    """Clamp every gradient element into ``[-clip_value, clip_value]``."""
    with no_grad():
        for p in _with_grads(parameters):
            p.grad = F.clip(p.grad, -float(clip_value), float(clip_value))


__all__ = ["clip_grad_norm_", "clip_grad_value_"]
