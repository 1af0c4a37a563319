"""Adam and AdamW (PyTorch's update rule and argument names; OneFlow's too)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from actorflow.errors import UsageError
from actorflow.frontend import functional_nn as F
from actorflow.optim.optimizer import Optimizer


def _sqrt(x: Any) -> Any:
    return math.sqrt(x) if isinstance(x, (int, float)) else F.sqrt(x)


class Adam(Optimizer):
    """``m = b1 m + (1-b1) g``, ``v = b2 v + (1-b2) g^2``,
    ``p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)``; ``weight_decay`` adds
    ``wd * p`` to ``g`` (L2), AdamW instead scales ``p`` by ``1 - lr * wd`` first."""

    decoupled = False

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False,
                 do_bias_correction: bool = True) -> None:
        if lr < 0.0 or eps < 0.0 or not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] < 1.0):
            raise UsageError(f"Invalid Adam hyper-parameters: lr={lr}, betas={betas}, eps={eps}")
        if amsgrad:
            raise UsageError("amsgrad=True is not supported")
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps,
                                  "weight_decay": weight_decay,
                                  "do_bias_correction": do_bias_correction})

    def _update(self, p: Any, g: Any, st: Any, group: dict[str, Any], lr: Any,
                step: Any) -> Any:
        b1, b2 = group["betas"]
        wd = group["weight_decay"]
        if wd and not self.decoupled:
            g = g + p * wd
        if wd and self.decoupled:
            p = p * (1.0 - lr * wd)
        m = st.get("exp_avg", p) * b1 + g * (1.0 - b1)
        v = st.get("exp_avg_sq", p) * b2 + g * g * (1.0 - b2)
        st.set("exp_avg", m)
        st.set("exp_avg_sq", v)
        if group["do_bias_correction"]:
            bc1, bc2 = 1.0 - b1 ** step, 1.0 - b2 ** step
            denom = F.sqrt(v) / _sqrt(bc2) + group["eps"]
            return p - m / denom * (lr / bc1)
        return p - m / (F.sqrt(v) + group["eps"]) * lr


class AdamW(Adam):
    decoupled = True

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.01, amsgrad: bool = False,
                 do_bias_correction: bool = True) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, do_bias_correction)


__all__ = ["Adam", "AdamW"]
