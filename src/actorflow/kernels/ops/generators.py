"""Ops with no inputs: constant, arange, random_normal, variable.

Generators used by source actors may shift their values by ``piece_scale * piece_id`` so
every piece is distinct and a test can tell pieces apart.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from actorflow.errors import OpError
from actorflow.kernels.blob import BlobDesc
from actorflow.kernels.registry import Arrays, Attrs, Blobs, KernelContext, OpDef, register_op


def _shape_dtype(attrs: Attrs, default_dtype: str = "float32") -> tuple[tuple[int, ...], str]:
    shape = tuple(int(s) for s in attrs["shape"])
    if any(s < 0 for s in shape):
        raise OpError(f"shape {shape} has a negative dimension")
    try:
        dtype = np.dtype(attrs.get("dtype", default_dtype)).name
    except TypeError as e:
        raise OpError(f"unknown dtype {attrs.get('dtype')!r}") from e
    return shape, dtype


def _shift(ctx: KernelContext, out: Any, attrs: Attrs) -> None:
    s = attrs.get("piece_scale", 0)
    if s:
        out += s * ctx.piece_id


def _constant_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    return {"out": BlobDesc(*_shape_dtype(attrs))}


def _constant_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    out = outs["out"]
    out.fill(attrs.get("value", 0))
    _shift(ctx, out, attrs)


def arange_length(start: float, stop: float, step: float) -> int:
    """How many values ``start, start + step, ...`` lie before ``stop`` (floats allowed)."""
    if step == 0:
        raise OpError("arange: step must not be 0")
    if all(isinstance(v, int) for v in (start, stop, step)):
        return len(range(int(start), int(stop), int(step)))
    return max(0, math.ceil((stop - start) / step))


def _arange_attrs(attrs: Attrs) -> tuple[float, float, float]:
    vals = (attrs.get("start", 0), attrs["stop"], attrs.get("step", 1))
    for v in vals:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise OpError(f"arange: start, stop and step must be numbers, got {v!r}")
    return vals


def _arange_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    start, stop, step = _arange_attrs(attrs)
    default = "int64" if all(isinstance(v, int) for v in (start, stop, step)) else "float32"
    dtype = np.dtype(attrs.get("dtype") or default).name
    return {"out": BlobDesc((arange_length(start, stop, step),), dtype)}


def _arange_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    out = outs["out"]
    start, stop, step = _arange_attrs(attrs)
    if all(isinstance(v, int) for v in (start, stop, step)):
        out[...] = ctx.xp.arange(start, stop, step)
    else:  # start + i * step in float64, as many as arange_length says
        out[...] = start + step * ctx.xp.arange(out.shape[0], dtype="float64")
    _shift(ctx, out, attrs)


def _random_normal_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    shape, dtype = _shape_dtype(attrs)
    if np.dtype(dtype).kind != "f":
        raise OpError(f"random_normal makes floats, not {dtype}")
    return {"out": BlobDesc(shape, dtype)}


def _random_normal_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    # Seeded per (seed, piece): piece i gives the same numbers wherever it runs.  Drawn on
    # the host with numpy's generator and copied to the device (xp.asarray), so a device
    # gives exactly numpy's numbers (tests/gpu/test_kernels_on_device.py checks equality).
    rng = np.random.default_rng([int(attrs.get("seed", 0)), int(ctx.piece_id)])
    out = outs["out"]
    vals = rng.standard_normal(out.shape) * float(attrs.get("std", 1.0)) + float(
        attrs.get("mean", 0.0))
    out[...] = ctx.xp.asarray(vals.astype(out.dtype))


def _variable_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    value = ctx.state.get("value")
    out = outs["out"]
    if value is None:  # drawn / loaded on the host once, then kept where the kernel runs
        value = ctx.state["value"] = ctx.xp.asarray(initial_variable_value(attrs))
    out[...] = value


def initial_variable_value(attrs: Attrs) -> np.ndarray:
    """The first value of a variable: zeros, a seeded normal draw, a ``.npy`` file, or a
    checkpoint directory (``Session.save``)."""
    shape, dtype = _shape_dtype(attrs)
    init = attrs.get("init", "zeros")
    if init == "zeros":
        return np.zeros(shape, dtype)
    if init == "constant":
        return np.full(shape, attrs.get("value", 0), dtype)
    if init == "normal":
        rng = np.random.default_rng(int(attrs.get("seed", 0)))
        return (rng.standard_normal(shape) * float(attrs.get("std", 1.0))
                + float(attrs.get("mean", 0.0))).astype(dtype)
    if init == "uniform":  # nn layers' default draws (kaiming/xavier bounds)
        rng = np.random.default_rng(int(attrs.get("seed", 0)))
        return rng.uniform(float(attrs["low"]), float(attrs["high"]), shape).astype(dtype)
    if init == "value":  # values given inline (a parameter changed before it was traced)
        value = np.asarray(attrs["value"], dtype=dtype)
        if value.size != int(np.prod(shape)):
            raise OpError(f"inline value holds {value.size} numbers, shape {shape} needs "
                          f"{int(np.prod(shape))}")
        return value.reshape(shape)
    if init == "file":
        path = attrs["path"]
        try:
            value = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise OpError(f"cannot load variable from {path}: {e}") from e
        if value.shape != shape:
            raise OpError(f"{path} holds shape {value.shape}, variable wants {shape}")
        return value.astype(dtype)
    if init == "checkpoint":  # a directory written by Session.save (any machine count)
        from actorflow.errors import UsageError
        from actorflow.kernels.checkpoint import read_variable

        try:
            return read_variable(attrs["path"], attrs["checkpoint_name"], shape, dtype)
        except UsageError as e:
            raise OpError(str(e)) from e
    raise OpError(f"unknown init {init!r}; expected one of {', '.join(INITS)}")


INITS = ("zeros", "constant", "normal", "uniform", "value", "file", "checkpoint")


register_op(OpDef("constant", (), _constant_infer, _constant_kernel))
register_op(OpDef("arange", (), _arange_infer, _arange_kernel))
register_op(OpDef("random_normal", (), _random_normal_infer, _random_normal_kernel))
register_op(OpDef("variable", (), _constant_infer, _variable_kernel,
                  doc="a parameter kept in its actor across pieces"))
