"""Learning-rate schedules as one pure function, and the op that evaluates it in a job.

``lr_at(t, spec)`` is the learning rate after ``t`` scheduler steps.  An eager scheduler
calls it in Python (``optim.lr_scheduler``); in a job the ``learning_rate`` op calls it in
its kernel on the step counter variable, so both modes follow one formula.

- ``{"kind": "constant", "base_lr"}``
- ``{"kind": "step", "base_lr", "step_size", "gamma"}``: ``base_lr * gamma ** (t // step_size)``
- ``{"kind": "cosine", "base_lr", "T_max", "eta_min"}``: PyTorch's CosineAnnealingLR closed form
- ``{"kind": "warmup", "warmup_factor", "warmup_iters", "method", "after": spec}``: OneFlow's
  WarmupLR: for ``t < warmup_iters`` the ``after`` schedule's first rate times a factor
  rising linearly from ``warmup_factor`` to 1 (``method="constant"``: ``warmup_factor``);
  then ``after`` at ``t - warmup_iters``.
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
        w = int(spec["warmup_iters"])
        if t >= w:
            return lr_at(t - w, spec["after"])
        f = float(spec["warmup_factor"])
        if spec.get("method", "linear") == "linear":
            f = f + (1.0 - f) * t / w
        return lr_at(0, spec["after"]) * f
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
