"""Adam and AdamW (PyTorch's update rule and argument names; OneFlow's too)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from actorflow.errors import UsageError
from actorflow.frontend import functional_nn as F
from actorflow.optim.optimizer import Optimizer


def _sqrt(x: Any) -> Any:
    return math.sqrt(x) if isinstance(x, (int, float)) else F.sqrt(x)


def _one_minus(beta: float, dtype: Any) -> float:
    """``1 - beta``; for float32 parameters as OneFlow's float32 kernel computes it (beta
    rounded to float32 first: ``1 - 0.999`` is 0.00099998713 there, which moves the second
    moment by 1.3e-5 relative)."""
    if str(dtype) == "float32":
        return float(np.float32(1.0) - np.float32(beta))
    return 1.0 - beta


def _bias_correction(beta: float, step: Any, dtype: Any) -> Any:
    """``1 - beta ** step`` in float64 (OneFlow computes it in Python): in float32,
    ``1 - 0.999 ** 2`` loses 3e-5 of its value to cancellation.  ``step`` is a number
    eagerly and the step counter tensor in a job."""
    if isinstance(step, (int, float)):
        return 1.0 - beta ** step
    return F.cast(1.0 - beta ** F.cast(step, "float64"), dtype)


class Adam(Optimizer):
    """``m = b1 m + (1-b1) g``, ``v = b2 v + (1-b2) g^2``,
    ``p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)``; ``weight_decay`` adds
    ``wd * p`` to ``g`` (L2), AdamW instead scales ``p`` by ``1 - lr * wd`` first;
    ``amsgrad`` uses the largest ``v`` so far."""

    decoupled = False

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False,
                 do_bias_correction: bool = True) -> None:
        if lr < 0.0:
            raise UsageError(f"Invalid learning rate: {lr}")
        if eps < 0.0:
            raise UsageError(f"Invalid epsilon value: {eps}")
        for i, b in enumerate(betas):
            if not 0.0 <= b < 1.0:
                raise UsageError(f"Invalid beta parameter at index {i}: {b}")
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps,
                                  "weight_decay": weight_decay, "amsgrad": bool(amsgrad),
                                  "do_bias_correction": do_bias_correction})

    def _update(self, p: Any, g: Any, st: Any, group: dict[str, Any], lr: Any,
                step: Any) -> Any:
        b1, b2 = group["betas"]
        c1, c2 = _one_minus(b1, p.dtype), _one_minus(b2, p.dtype)
        wd = group["weight_decay"]
        if wd and not self.decoupled:
            g = g + p * wd
        if wd and self.decoupled:
            p = p * (1.0 - lr * wd)
        m = st.get("exp_avg", p) * b1 + g * c1
        v = st.get("exp_avg_sq", p) * b2 + g * g * c2
        st.set("exp_avg", m)
        st.set("exp_avg_sq", v)
        if group["amsgrad"]:  # the largest second moment so far (state max_exp_avg_sq)
            v = F.maximum(st.get("max_exp_avg_sq", p), v)
            st.set("max_exp_avg_sq", v)
        if group["do_bias_correction"]:
            bc1, bc2 = _bias_correction(b1, step, p.dtype), _bias_correction(b2, step, p.dtype)
            denom = F.sqrt(v) / _sqrt(bc2) + group["eps"]
            return p - m / denom * (lr / bc1)
        return p - m / (F.sqrt(v) + group["eps"]) * lr


class AdamW(Adam):
    """Adam with decoupled weight decay; ``weight_decay`` defaults to 0 as in OneFlow
    (PyTorch's default is 0.01)."""

    decoupled = True

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False,
                 do_bias_correction: bool = True) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, do_bias_correction)


__all__ = ["Adam", "AdamW"]
