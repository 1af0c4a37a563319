"""Initializers, as ``nn.init``: each draws with a seed from ``af.manual_seed``'s stream and
records the draw on the parameter, so a job's variable of it draws the same numbers."""

from __future__ import annotations

import math
from typing import Any

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


def kaiming_uniform_bound(fan_in: int) -> float:
    """PyTorch's default for Linear: kaiming_uniform(a=sqrt(5)) = U(-1/sqrt(fan_in), ...)."""
    return 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0


__all__ = ["constant", "kaiming_uniform_bound", "normal", "uniform"]
