"""SGD with momentum, dampening, Nesterov and weight decay (PyTorch's and OneFlow's rule)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from actorflow.errors import UsageError
from actorflow.optim.optimizer import Optimizer


class SGD(Optimizer):
    """``g += weight_decay * p``; with momentum ``buf = momentum * buf + (1 - dampening) * g``
    (``g`` itself at the first step: the buffer starts at zero, exactly PyTorch's first step
    when ``dampening == 0``), ``g = buf`` or, Nesterov, ``g + momentum * buf``; then
    ``p -= lr * g`` (``maximize``: the gradient negated first).  ``lr`` defaults to 1e-3 as
    in OneFlow."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, momentum: float = 0.0,
                 dampening: float = 0.0, weight_decay: float = 0.0,
                 nesterov: bool = False, maximize: bool = False) -> None:
        if lr < 0.0:
            raise UsageError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise UsageError(f"Invalid momentum: {momentum}")
        if weight_decay < 0.0:
            raise UsageError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise UsageError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, {"lr": lr, "momentum": momentum, "dampening": dampening,
                                  "weight_decay": weight_decay, "nesterov": nesterov,
                                  "maximize": bool(maximize)})

    def _update(self, p: Any, g: Any, st: Any, group: dict[str, Any], lr: Any,
                step: Any) -> Any:
        wd, m = group["weight_decay"], group["momentum"]
        if group["maximize"]:
            g = -g
        if wd:
            g = g + p * wd
        if m:
            damp = group["dampening"]
            buf = st.get("momentum_buffer", p) * m + (g if damp == 0 else g * (1.0 - damp))
            st.set("momentum_buffer", buf)
            g = g + buf * m if group["nesterov"] else buf
        return p - g * lr


__all__ = ["SGD"]
