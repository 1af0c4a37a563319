"""Learning-rate schedulers: StepLR, MultiStepLR, ExponentialLR, CosineAnnealingLR,
CosineDecayLR, LinearLR, ConstantLR, PolynomialLR (OneFlow 0.9's formulas), and OneFlow's
WarmupLR around any of them.  Eagerly ``scheduler.step()`` sets each group's ``lr``; in a
job the optimizer's ``step()`` evaluates the same schedule on its step counter
(``kernels/ops/lr_schedule``), one scheduler step per optimizer step, as OneFlow's graphs
do."""

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


class MultiStepLR(LRScheduler):
    """``lr * gamma ** (number of milestones <= step)``."""

    def __init__(self, optimizer: Optimizer, milestones: list[int], gamma: float = 0.1,
                 last_epoch: int = -1, last_step: int | None = None) -> None:
        ms = [int(m) for m in milestones]
        if ms != sorted(ms):
            raise UsageError(f"MultiStepLR: milestones should be increasing, got {ms}")
        self.milestones, self.gamma = ms, float(gamma)
        super().__init__(optimizer, last_epoch, last_step)

    def spec(self, base_lr: float) -> dict[str, Any]:
        return {"kind": "multistep", "base_lr": base_lr, "milestones": self.milestones,
                "gamma": self.gamma}


class ExponentialLR(LRScheduler):
    """``lr * gamma ** step``."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1,
                 last_step: int | None = None) -> None:
        if gamma <= 0.0:
            raise UsageError(f"ExponentialLR: gamma must be greater than zero, got {gamma}")
        self.gamma = float(gamma)
        super().__init__(optimizer, last_epoch, last_step)

    def spec(self, base_lr: float) -> dict[str, Any]:
        return {"kind": "exponential", "base_lr": base_lr, "gamma": self.gamma}


class CosineDecayLR(LRScheduler):
    """OneFlow's: ``lr * ((1 - alpha) * (1 + cos(pi * step / decay_steps)) / 2 + alpha)``,
    then ``lr * alpha`` from ``decay_steps`` on."""

    def __init__(self, optimizer: Optimizer, decay_steps: int, alpha: float = 0.0,
                 last_epoch: int = -1, last_step: int | None = None) -> None:
        if decay_steps <= 0:
            raise UsageError(f"CosineDecayLR: decay_steps must be positive, got {decay_steps}")
        self.decay_steps, self.alpha = int(decay_steps), float(alpha)
        super().__init__(optimizer, last_epoch, last_step)

    def spec(self, base_lr: float) -> dict[str, Any]:
        return {"kind": "cosine_decay", "base_lr": base_lr, "decay_steps": self.decay_steps,
                "alpha": self.alpha}


class LinearLR(LRScheduler):
    """The factor goes linearly from ``start_factor`` to ``end_factor`` over
    ``total_iters`` steps, then stays."""

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3,
                 end_factor: float = 1.0, total_iters: int = 5, last_epoch: int = -1,
                 last_step: int | None = None) -> None:
        for name, f in (("start_factor", start_factor), ("end_factor", end_factor)):
            if not 0.0 <= f <= 1.0:
                raise UsageError(f"LinearLR: {name} expected between 0 and 1, got {f}")
        self.start_factor, self.end_factor = float(start_factor), float(end_factor)
        self.total_iters = int(total_iters)
        super().__init__(optimizer, last_epoch, last_step)

    def spec(self, base_lr: float) -> dict[str, Any]:
        return {"kind": "linear", "base_lr": base_lr, "start_factor": self.start_factor,
                "end_factor": self.end_factor, "total_iters": self.total_iters}


class ConstantLR(LRScheduler):
    """``lr * factor`` for ``total_iters`` steps, then ``lr``."""

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1, last_step: int | None = None) -> None:
        if not 0.0 <= factor <= 1.0:
            raise UsageError(f"ConstantLR: factor expected between 0 and 1, got {factor}")
        self.factor, self.total_iters = float(factor), int(total_iters)
        super().__init__(optimizer, last_epoch, last_step)

    def spec(self, base_lr: float) -> dict[str, Any]:
        return {"kind": "constant_factor", "base_lr": base_lr, "factor": self.factor,
                "total_iters": self.total_iters}


class PolynomialLR(LRScheduler):
    """OneFlow's: ``(lr - end) * (1 - step / decay_batch) ** power + end`` (``cycle``:
    ``decay_batch`` grows to the next multiple past the step)."""

    def __init__(self, optimizer: Optimizer, decay_batch: int,
                 end_learning_rate: float = 0.0001, power: float = 1.0, cycle: bool = False,
                 last_epoch: int = -1, last_step: int | None = None) -> None:
        if decay_batch <= 0:
            raise UsageError(f"PolynomialLR: decay_batch must be positive, got {decay_batch}")
        self.decay_batch, self.end_learning_rate = int(decay_batch), float(end_learning_rate)
        self.power, self.cycle = float(power), bool(cycle)
        super().__init__(optimizer, last_epoch, last_step)

    def spec(self, base_lr: float) -> dict[str, Any]:
        return {"kind": "polynomial", "base_lr": base_lr, "decay_batch": self.decay_batch,
                "end_learning_rate": self.end_learning_rate, "power": self.power,
                "cycle": self.cycle}


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


__all__ = ["ConstantLR", "CosineAnnealingLR", "CosineDecayLR", "ExponentialLR", "LRScheduler",
           "LinearLR", "MultiStepLR", "PolynomialLR", "StepLR", "WarmupLR"]
