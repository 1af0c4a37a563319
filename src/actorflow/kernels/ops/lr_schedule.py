"""Learning-rate schedules as one pure function, and the op that evaluates it in a job.

``lr_at(t, spec)`` is the learning rate after ``t`` scheduler steps.  An eager scheduler
calls it in Python (``optim.lr_scheduler``); in a job the ``learning_rate`` op calls it in
its kernel on the step counter variable, so both modes follow one formula.

- ``{"kind": "constant", "base_lr"}``
- ``{"kind": "step", "base_lr", "step_size", "gamma"}``: ``base_lr * gamma ** (t // step_size)``
- ``{"kind": "cosine", "base_lr", "T_max", "eta_min"}``: PyTorch's CosineAnnealingLR closed form
- ``{"kind": "warmup", "warmup_factor", "warmup_iters", "method", "prefix", "after": spec}``:
  OneFlow 0.9's WarmupLR: for ``t < warmup_iters`` a line from ``warmup_factor * base_lr``
  to the rate ``after`` reaches at ``warmup_iters`` (to ``base_lr`` itself when ``after`` is
  constant or with ``prefix``; ``method="constant"``: ``warmup_factor * base_lr``
  throughout); then ``after`` at ``t`` (``prefix``: at ``t - warmup_iters``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorflow.errors import OpError
from actorflow.kernels.blob import BlobDesc
from actorflow.kernels.registry import Arrays, Attrs, Blobs, KernelContext, OpDef, register_op


def lr_at(t: int, spec: dict[str, Any]) -> float:
    kind = spec.get("kind")
    if kind == "constant":
        return float(spec["base_lr"])
    if kind == "step":
        return float(spec["base_lr"]) * float(spec["gamma"]) ** (t // int(spec["step_size"]))
    if kind == "cosine":
        lo, hi, n = float(spec.get("eta_min", 0.0)), float(spec["base_lr"]), int(spec["T_max"])
        return lo + (hi - lo) * (1.0 + math.cos(math.pi * t / n)) / 2.0
    if kind == "warmup":
        w, after, prefix = int(spec["warmup_iters"]), spec["after"], bool(spec.get("prefix"))
        if t >= w:
            return lr_at(t - w if prefix else t, after)
        base, f = float(after["base_lr"]), float(spec["warmup_factor"])
        if spec.get("method", "linear") != "linear":
            return base * f
        end = base if prefix or after.get("kind") == "constant" else lr_at(w, after)
        return base * f + (end - base * f) * t / w
    raise OpError(f"unknown learning-rate schedule kind {kind!r} (constant, step, cosine, "
                  "warmup)")


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
