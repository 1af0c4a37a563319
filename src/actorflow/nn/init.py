"""Initializers, as ``nn.init``: each draws with a seed from ``af.manual_seed``'s stream and
records the draw on the parameter, so a job's variable of it draws the same numbers."""

from __future__ import annotations

import math
from typing import Any

from actorflow.frontend import functional_nn as F
from actorflow.frontend.autograd.mode import no_grad
from actorflow.frontend.functional_nn import next_seed
from actorflow.nn.parameter import init_parameter


def uniform(shape: tuple[int, ...], low: float, high: float, dtype: str = "float32") -> Any:
    return init_parameter(shape, {"init": "uniform", "low": low, "high": high,
                                  "seed": next_seed()}, dtype)


def normal(shape: tuple[int, ...], mean: float = 0.0, std: float = 1.0,
           dtype: str = "float32") -> Any:
    return init_parameter(shape, {"init": "normal", "mean": mean, "std": std,
                                  "seed": next_seed()}, dtype)


def constant(shape: tuple[int, ...], value: float, dtype: str = "float32") -> Any:
    return init_parameter(shape, {"init": "constant", "value": value}, dtype)


def _overwrite(t: Any, value: Any) -> Any:
    """``t``'s values replaced in place (a parameter then starts a job's variable from them)."""
    with no_grad():
        t.copy_(value)
    return t


def constant_(t: Any, val: float) -> Any:
    """Fill ``t`` with ``val`` in place (OneFlow's ``nn.init.constant_``)."""
    with no_grad():
        return _overwrite(t, F.fill_like(t, float(val)))


def zeros_(t: Any) -> Any:
    return constant_(t, 0.0)


def ones_(t: Any) -> Any:
    return constant_(t, 1.0)


def uniform_(t: Any, a: float = 0.0, b: float = 1.0) -> Any:
    """Draw ``t`` from U(a, b) in place, from ``af.manual_seed``'s stream."""
    return _overwrite(t, uniform(tuple(t.shape), a, b).detach())


def normal_(t: Any, mean: float = 0.0, std: float = 1.0) -> Any:
    """Draw ``t`` from N(mean, std^2) in place, from ``af.manual_seed``'s stream."""
    return _overwrite(t, normal(tuple(t.shape), mean, std).detach())


def kaiming_uniform_bound(fan_in: int) -> float:
    """PyTorch's default for Linear: kaiming_uniform(a=sqrt(5)) = U(-1/sqrt(fan_in), ...)."""
    return 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0


__all__ = ["constant", "constant_", "kaiming_uniform_bound", "normal", "normal_", "ones_",
           "uniform", "uniform_", "zeros_"]
