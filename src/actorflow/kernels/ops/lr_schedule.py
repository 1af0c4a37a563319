"""Learning-rate schedules as one pure function, and the op that evaluates it in a job.

``lr_at(t, spec)`` is the learning rate after ``t`` scheduler steps.  An eager scheduler
calls it in Python (``optim.lr_scheduler``); in a job the ``learning_rate`` op calls it in
its kernel on the step counter variable, so both modes follow one formula.

- ``{"kind": "constant", "base_lr"}``
- ``{"kind": "step", "base_lr", "step_size", "gamma"}``: ``base_lr * gamma ** (t // step_size)``
- ``{"kind": "cosine", "base_lr", "T_max", "eta_min"}``: PyTorch's CosineAnnealingLR closed form
- ``multistep`` (``milestones``, ``gamma``), ``exponential`` (``gamma``), ``cosine_decay``
  (``decay_steps``, ``alpha``), ``linear`` (``start_factor``, ``end_factor``,
  ``total_iters``), ``constant_factor`` (``factor``, ``total_iters``: OneFlow's ConstantLR),
  ``polynomial`` (``decay_batch``, ``end_learning_rate``, ``power``, ``cycle``): OneFlow
  0.9's ``get_lr`` of the scheduler of that name
- ``{"kind": "warmup", "warmup_factor", "warmup_iters", "method", "prefix", "after": spec}``:
  OneFlow 0.9's WarmupLR: for ``t < warmup_iters`` a line from ``warmup_factor * base_lr``
  to the rate ``after`` reaches at ``warmup_iters`` (to ``base_lr`` itself when ``after`` is
  constant or with ``prefix``; ``method="constant"``: ``warmup_factor * base_lr``
  throughout); then ``after`` at ``t`` (``prefix``: at ``t - warmup_iters``).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from actorflow.errors import OpError
from actorflow.kernels.blob import BlobDesc
from actorflow.kernels.registry import Arrays, Attrs, Blobs, KernelContext, OpDef, register_op


def _constant(t: int, s: dict[str, Any]) -> float:
    return float(s["base_lr"])


def _step(t: int, s: dict[str, Any]) -> float:
    return float(s["base_lr"]) * float(s["gamma"]) ** (t // int(s["step_size"]))


def _multistep(t: int, s: dict[str, Any]) -> float:
    return float(s["base_lr"]) * float(s["gamma"]) ** bisect.bisect_right(s["milestones"], t)


def _exponential(t: int, s: dict[str, Any]) -> float:
    return float(s["base_lr"]) * float(s["gamma"]) ** t


def _cosine(t: int, s: dict[str, Any]) -> float:
    lo, hi, n = float(s.get("eta_min", 0.0)), float(s["base_lr"]), int(s["T_max"])
    return lo + (hi - lo) * (1.0 + math.cos(math.pi * t / n)) / 2.0


def _cosine_decay(t: int, s: dict[str, Any]) -> float:
    n, alpha = int(s["decay_steps"]), float(s["alpha"])
    if t >= n:
        return float(s["base_lr"]) * alpha
    return float(s["base_lr"]) * ((1 - alpha) * 0.5 * (1 + math.cos(math.pi * t / n)) + alpha)


def _linear(t: int, s: dict[str, Any]) -> float:
    a, b, n = float(s["start_factor"]), float(s["end_factor"]), int(s["total_iters"])
    return float(s["base_lr"]) * (a + (b - a) * t / n if t < n else b)


def _constant_factor(t: int, s: dict[str, Any]) -> float:
    f = float(s["factor"]) if t < int(s["total_iters"]) else 1.0
    return float(s["base_lr"]) * f


def _polynomial(t: int, s: dict[str, Any]) -> float:
    n, end, base = int(s["decay_batch"]), float(s["end_learning_rate"]), float(s["base_lr"])
    if s.get("cycle"):  # OneFlow counts step 0 as 1 here
        t = max(t, 1)
        n = n * math.ceil(t / n)
    else:
        t = min(t, n)
    return (base - end) * (1 - t / n) ** float(s["power"]) + end


def _warmup(t: int, s: dict[str, Any]) -> float:
    w, after, prefix = int(s["warmup_iters"]), s["after"], bool(s.get("prefix"))
    if t >= w:
        return lr_at(t - w if prefix else t, after)
    base, f = float(after["base_lr"]), float(s["warmup_factor"])
    if s.get("method", "linear") != "linear":
        return base * f
    end = base if prefix or after.get("kind") == "constant" else lr_at(w, after)
    return base * f + (end - base * f) * t / w


SCHEDULES: dict[str, Callable[[int, dict[str, Any]], float]] = {
    "constant": _constant, "step": _step, "multistep": _multistep,
    "exponential": _exponential, "cosine": _cosine, "cosine_decay": _cosine_decay,
    "linear": _linear, "constant_factor": _constant_factor, "polynomial": _polynomial,
    "warmup": _warmup,
}


def lr_at(t: int, spec: dict[str, Any]) -> float:
    fn = SCHEDULES.get(spec.get("kind"))  # type: ignore[arg-type]
    if fn is None:
        raise OpError(f"unknown learning-rate schedule kind {spec.get('kind')!r} "
                      f"({', '.join(SCHEDULES)})")
    return fn(t, spec)


def _infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    lr_at(0, attrs["spec"])  # a bad spec fails at trace time
    return {"out": BlobDesc(ins["step"].shape, "float32")}


def _kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    step = ins["step"]
    t = int(np.asarray(step.get() if hasattr(step, "get") else step).reshape(-1)[0])
    out = outs["out"]
    out[...] = ctx.xp.asarray(np.full(out.shape, lr_at(t, attrs["spec"]), np.float32))


register_op(OpDef("learning_rate", ("step",), _infer, _kernel,
                  doc="lr_at(step, attr spec): the schedule's rate at a step counter"))
