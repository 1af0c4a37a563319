"""SGD with momentum, dampening, Nesterov and weight decay (PyTorch's and OneFlow's rule)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from actorflow.errors import UsageError
from actorflow.optim.optimizer import _REQUIRED, Optimizer


class SGD(Optimizer):
    """``g += weight_decay * p``; with momentum ``buf = momentum * buf + (1 - dampening) * g``
    (``g`` itself at the first step: the buffer starts at zero, exactly PyTorch's first step
    when ``dampening == 0``), ``g = buf`` or, Nesterov, ``g + momentum * buf``; then
    ``p -= lr * g``."""

    def __init__(self, params: Iterable[Any], lr: float = _REQUIRED, momentum: float = 0.0,
                 dampening: float = 0.0, weight_decay: float = 0.0,
                 nesterov: bool = False) -> None:
        if lr is not _REQUIRED and lr < 0.0:
            raise UsageError(f"Invalid learning rate: {lr}")
        if momentum < 0.0 or weight_decay < 0.0:
            raise UsageError(f"Invalid momentum {momentum} or weight_decay {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise UsageError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, {"lr": lr, "momentum": momentum, "dampening": dampening,
                                  "weight_decay": weight_decay, "nesterov": nesterov})

    def _update(self, p: Any, g: Any, st: Any, group: dict[str, Any], lr: Any,
                step: Any) -> Any:
        wd, m = group["weight_decay"], group["momentum"]
        if wd:
            g = g + p * wd
        if m:
            damp = group["dampening"]
            buf = st.get("momentum_buffer", p) * m + (g if damp == 0 else g * (1.0 - damp))
            st.set("momentum_buffer", buf)
            g = g + buf * m if group["nesterov"] else buf
        return p - g * lr


__all__ = ["SGD"]
