"""Learning-rate schedulers: StepLR, CosineAnnealingLR, and OneFlow's WarmupLR around
either.  Eagerly ``scheduler.step()`` sets each group's ``lr``; in a job the optimizer's
``step()`` evaluates the same schedule on its step counter (``kernels/ops/lr_schedule``),
one scheduler step per optimizer step, as OneFlow's graphs do."""

from __future__ import annotations

from typing import Any

from actorflow.errors import UsageError
from actorflow.kernels.ops.lr_schedule import lr_at
from actorflow.optim.optimizer import Optimizer


class LRScheduler:
    def __init__(self, optimizer: Optimizer, last_epoch: int = -1,
                 last_step: int | None = None) -> None:
        if last_step is not None:  # OneFlow's name of PyTorch's last_epoch
            last_epoch = last_step
        if not isinstance(optimizer, Optimizer):
            raise UsageError(f"{type(self).__name__} needs an Optimizer, not "
                             f"{type(optimizer).__name__}")
        self.optimizer = optimizer
        for g in optimizer.param_groups:
            g.setdefault("initial_lr", g["lr"])
        self.base_lrs = [g["initial_lr"] for g in optimizer.param_groups]
        self.last_epoch = last_epoch
        optimizer._lr_specs = [self.spec(lr) for lr in self.base_lrs]
        self.step()

    def spec(self, base_lr: float) -> dict[str, Any]:
        raise NotImplementedError

    def get_last_lr(self) -> list[float]:
        return [g["lr"] for g in self.optimizer.param_groups]

    def step(self) -> None:
        self.last_epoch += 1
        for g, spec in zip(self.optimizer.param_groups, self.optimizer._lr_specs or []):
            g["lr"] = lr_at(self.last_epoch, spec)

    def state_dict(self) -> dict[str, Any]:
        return {"last_epoch": self.last_epoch, "base_lrs": list(self.base_lrs)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.last_epoch = int(state["last_epoch"]) - 1
        self.step()


class StepLR(LRScheduler):
    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1,
                 last_epoch: int = -1,
                 last_step: int | None = None) -> None:
        self.step_size, self.gamma = int(step_size), float(gamma)
        super().__init__(optimizer, last_epoch, last_step)

    def spec(self, base_lr: float) -> dict[str, Any]:
        return {"kind": "step", "base_lr": base_lr, "step_size": self.step_size,
                "gamma": self.gamma}


class CosineAnnealingLR(LRScheduler):
    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0,
                 last_epoch: int = -1,
                 last_step: int | None = None) -> None:
        self.T_max, self.eta_min = int(T_max), float(eta_min)
        super().__init__(optimizer, last_epoch, last_step)

    def spec(self, base_lr: float) -> dict[str, Any]:
        return {"kind": "cosine", "base_lr": base_lr, "T_max": self.T_max,
                "eta_min": self.eta_min}


class WarmupLR(LRScheduler):
    """OneFlow's warm-up: for ``warmup_iters`` steps the rate goes linearly from
    ``warmup_factor * lr`` to the rate the wrapped scheduler has at ``warmup_iters``
    ('linear'; 'constant' keeps ``warmup_factor * lr``), then the wrapped scheduler (or
    ``lr`` when given an optimizer) continues at the same step (``warmup_prefix=True``:
    it starts after the warm-up, from its step 0, and the line ends at ``lr``)."""

    def __init__(self, scheduler_or_optimizer: LRScheduler | Optimizer,
                 warmup_factor: float = 1.0 / 3, warmup_iters: int = 5,
                 warmup_method: str = "linear", warmup_prefix: bool = False,
                 last_epoch: int = -1, last_step: int | None = None) -> None:
        if warmup_method not in ("linear", "constant"):
            raise UsageError(f"warmup_method must be 'linear' or 'constant', not "
                             f"{warmup_method!r}")
        self.inner = scheduler_or_optimizer if isinstance(scheduler_or_optimizer,
                                                          LRScheduler) else None
        opt = self.inner.optimizer if self.inner else scheduler_or_optimizer
        self.warmup_factor, self.warmup_iters = float(warmup_factor), int(warmup_iters)
        self.warmup_method, self.warmup_prefix = warmup_method, bool(warmup_prefix)
        assert isinstance(opt, Optimizer)
        super().__init__(opt, last_epoch, last_step)

    def spec(self, base_lr: float) -> dict[str, Any]:
        after = self.inner.spec(base_lr) if self.inner else {"kind": "constant",
                                                             "base_lr": base_lr}
        return {"kind": "warmup", "warmup_factor": self.warmup_factor,
                "warmup_iters": self.warmup_iters, "method": self.warmup_method,
                "prefix": self.warmup_prefix, "after": after}


__all__ = ["CosineAnnealingLR", "LRScheduler", "StepLR", "WarmupLR"]
