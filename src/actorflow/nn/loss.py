"""Losses: ``CrossEntropyLoss`` (integer targets) and ``MSELoss``."""

from __future__ import annotations

from typing import Any

from actorflow.errors import UsageError
from actorflow.frontend import functional_nn as F
from actorflow.nn.module import Module


def mse_loss(input: Any, target: Any, reduction: str = "mean") -> Any:
    d = F.sub(input, target)
    sq = F.mul(d, d)
    if reduction == "none":
        return sq
    if reduction == "sum":
        return F.sum(sq)
    if reduction != "mean":
        raise UsageError(f"mse_loss(): reduction must be 'mean', 'sum' or 'none', not "
                         f"{reduction!r}")
    return F.mean(sq)


class CrossEntropyLoss(Module):
    def __init__(self, ignore_index: int = -100, reduction: str = "mean") -> None:
        super().__init__()
        self.ignore_index, self.reduction = ignore_index, reduction

    def forward(self, input: Any, target: Any) -> Any:
        return F.cross_entropy(input, target, ignore_index=self.ignore_index,
                               reduction=self.reduction)


class MSELoss(Module):
    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = reduction

    def forward(self, input: Any, target: Any) -> Any:
        return mse_loss(input, target, self.reduction)


__all__ = ["CrossEntropyLoss", "MSELoss", "mse_loss"]
