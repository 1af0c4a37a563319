"""Random jobs as plain data, built with actorflow.functional and mirrored in numpy.

Shared by the hypothesis oracle (``test_compile_oracle.py``) and by job files that
``flowlaunch sim`` loads (a description is JSON, so a worker process can rebuild it).
A description: ``{"machines", "dpm", "pieces", "inputs": [...], "steps": [...]}`` and an
optional ``"device"`` (``cpu`` by default, ``cuda`` for every placement on devices); every
tensor stays 2-D so each step can follow any other.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import actorflow as af
import actorflow.functional as F

UNARY = {
    "relu": (F.relu, lambda x: np.maximum(x, 0)),
    "tanh": (F.tanh, np.tanh),
    "neg": (F.neg, np.negative),
    "exp_tanh": (lambda t: F.exp(F.tanh(t)), lambda x: np.exp(np.tanh(x))),
}
SCALAR = {
    "add": (lambda t, v: t + v, lambda x, v: x + np.float32(v)),
    "sub": (lambda t, v: t - v, lambda x, v: x - np.float32(v)),
    "rsub": (lambda t, v: v - t, lambda x, v: np.float32(v) - x),
    "mul": (lambda t, v: t * v, lambda x, v: x * np.float32(v)),
    "div": (lambda t, v: t / v, lambda x, v: x / np.float32(v)),
}
BINARY = {
    "add": (lambda a, b: a + b, np.add),
    "sub": (lambda a, b: a - b, np.subtract),
    "mul": (lambda a, b: a * b, np.multiply),
}


def _sbp(code: str):
    return af.sbp.broadcast if code == "B" else af.sbp.split(int(code[1:]))


_DEVICE = ["cpu"]  # the device type of every placement of the job being built


def _place(ranks: list[int]):
    return af.placement(_DEVICE[0], ranks=ranks)


def _var_value(seed: int, shape) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


def build(desc: dict[str, Any]) -> af.Job:
    """The job a description stands for (outputs ``y``)."""
    _DEVICE[0] = desc.get("device", "cpu")
    with af.Job("oracle", pieces=desc["pieces"]) as job:
        xs = [af.random_input(f"x{i}", tuple(d["shape"]), seed=d["seed"],
                              placement=_place(d["ranks"]), sbp=_sbp(d["sbp"]))
              for i, d in enumerate(desc["inputs"])]
        h = xs[0] if len(xs) == 1 else BINARY[desc["combine"]][0](xs[0], xs[1])
        for k, step in enumerate(desc["steps"]):
            h = _apply(h, step, k)
        af.output("y", h)
    return job


def _apply(h, step: list, k: int):
    kind = step[0]
    if kind == "unary":
        return UNARY[step[1]][0](h)
    if kind == "scalar":
        return SCALAR[step[1]][0](h, step[2])
    if kind == "var_binary":
        _, op, row, seed, ranks, code = step
        shape = (h.shape[1],) if row else h.shape
        v = af.variable(f"v{k}", shape, init="normal", seed=seed, placement=_place(ranks),
                        sbp=_sbp(code))
        return BINARY[op][0](h, v)
    if kind == "matmul":
        _, n, seed, ranks, code = step
        w = af.variable(f"w{k}", (h.shape[1], n), init="normal", seed=seed,
                        placement=_place(ranks), sbp=_sbp(code))
        return h @ w
    if kind == "reduce":
        _, how, axis = step
        return (F.sum if how == "sum" else F.mean)(h, axis, keepdim=True)
    if kind == "softmax":
        return F.softmax(h, step[1])
    if kind == "transpose":
        return h.T
    if kind == "reshape":
        return h.reshape(h.shape[1], h.shape[0])
    if kind == "hint":
        return h.to_global(_place(step[1]), _sbp(step[2]))
    raise ValueError(f"unknown step {step!r}")


def reference(desc: dict[str, Any], piece: int) -> np.ndarray:
    """The same computation in plain numpy for one piece."""
    xs = [np.random.default_rng([d["seed"], piece]).standard_normal(d["shape"]).astype("float32")
          for d in desc["inputs"]]
    h = xs[0] if len(xs) == 1 else BINARY[desc["combine"]][1](xs[0], xs[1])
    for step in desc["steps"]:
        kind = step[0]
        if kind == "unary":
            h = UNARY[step[1]][1](h)
        elif kind == "scalar":
            h = SCALAR[step[1]][1](h, step[2])
        elif kind == "var_binary":
            _, op, row, seed, _r, _c = step
            h = BINARY[op][1](h, _var_value(seed, (h.shape[1],) if row else h.shape))
        elif kind == "matmul":
            h = h @ _var_value(step[2], (h.shape[1], step[1]))
        elif kind == "reduce":
            h = (np.sum if step[1] == "sum" else np.mean)(h, axis=step[2], keepdims=True)
        elif kind == "softmax":
            e = np.exp(h - h.max(axis=step[1], keepdims=True))
            h = e / e.sum(axis=step[1], keepdims=True)
        elif kind == "transpose":
            h = h.T
        elif kind == "reshape":
            h = h.reshape(h.shape[1], h.shape[0])
    return h


def max_error(desc: dict[str, Any], outputs: list[np.ndarray]) -> float:
    """Max of |got - want| / (1 + |want|) over the pieces."""
    err = 0.0
    for i, got in enumerate(outputs):
        want = reference(desc, i)
        if got.shape != want.shape:
            return float("inf")
        err = max(err, float(np.max(np.abs(got - want) / (1 + np.abs(want)), initial=0.0)))
    return err
