"""Indexing and broadcasting: ``strided_slice`` (``x[a:b:s, ..., i]``), its gradient
``strided_slice_grad`` (the slice's values placed in zeros), and ``broadcast_to``."""

from __future__ import annotations

from typing import Any

from actorflow.errors import OpError
from actorflow.kernels.blob import BlobDesc
from actorflow.kernels.grad import register_grad, sum_to
from actorflow.kernels.registry import Arrays, Attrs, Blobs, KernelContext, OpDef, register_op
from actorflow.kernels.sbp import register_sbp


def _region(shape: tuple[int, ...], attrs: Attrs) -> tuple[slice, ...]:
    begin, end = [int(x) for x in attrs["begin"]], [int(x) for x in attrs["end"]]
    step = [int(x) for x in attrs.get("step") or [1] * len(shape)]
    if not len(begin) == len(end) == len(step) == len(shape):
        raise OpError(f"begin {begin} / end {end} / step {step} need one entry per axis of "
                      f"{shape}")
    for ax, (b, e, s, n) in enumerate(zip(begin, end, step, shape)):
        if s < 1 or not 0 <= b <= n or not b <= e <= n:
            raise OpError(f"slice [{b}:{e}:{s}] is out of range for axis {ax} of {shape} "
                          "(0 <= begin <= end <= size, step >= 1)")
    return tuple(slice(b, e, s) for b, e, s in zip(begin, end, step))


def _sliced_shape(shape: tuple[int, ...], box: tuple[slice, ...]) -> tuple[int, ...]:
    return tuple(len(range(s.start, s.stop, s.step)) for s in box)


def _ss_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    d = ins["in"]
    return {"out": BlobDesc(_sliced_shape(d.shape, _region(d.shape, attrs)), d.dtype)}


def _ss_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    x = ins["in"]
    outs["out"][...] = x[_region(x.shape, attrs)]


def _ssg_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    shape = tuple(int(s) for s in attrs["shape"])
    want = _sliced_shape(shape, _region(shape, attrs))
    if tuple(ins["dy"].shape) != want:
        raise OpError(f"dy has shape {ins['dy'].shape}, the slice {want}")
    return {"out": BlobDesc(shape, ins["dy"].dtype)}


def _ssg_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    out = outs["out"]
    out.fill(0)
    out[_region(out.shape, attrs)] = ins["dy"]


register_op(OpDef("strided_slice", ("in",), _ss_infer, _ss_kernel,
                  doc="x[begin:end:step] on every axis (attrs: lists, one entry per axis)"))
register_op(OpDef("strided_slice_grad", ("dy",), _ssg_infer, _ssg_kernel,
                  doc="zeros of attr shape with dy at the slice begin:end:step"))


def _whole_axes(shape: tuple[int, ...], attrs: Attrs) -> list[int]:
    step = attrs.get("step") or [1] * len(shape)
    return [i for i, n in enumerate(shape) if int(attrs["begin"][i]) == 0
            and int(attrs["end"][i]) == n and int(step[i]) == 1]


def _grad_piece_attrs(a: Attrs, piece: tuple[int, ...]) -> dict[str, Any]:
    """strided_slice_grad on a piece: only whole axes are split, and there the slice ends
    at the piece's size, which is the piece's output size."""
    whole = set(_whole_axes(tuple(int(s) for s in a["shape"]), a))
    end = [piece[i] if i in whole else int(e) for i, e in enumerate(a["end"])]
    return {**a, "end": end, "shape": list(piece)}


def _slice_piece_attrs(a: Attrs, piece: tuple[int, ...]) -> dict[str, Any]:
    """strided_slice on a piece (``piece``: its output's): a slice starting at 0 with step
    1 ends at the output's size, split axis or not."""
    step = a.get("step") or [1] * len(piece)
    end = [n if int(a["begin"][i]) == 0 and int(step[i]) == 1 else int(a["end"][i])
           for i, n in enumerate(piece)]
    return {**a, "end": end}


register_sbp("strided_slice", lambda ins, out, a: [
    ({"in": f"S{i}"}, f"S{i}") for i in _whole_axes(ins["in"], a)], _slice_piece_attrs)
register_sbp("strided_slice_grad", lambda ins, out, a: [
    ({"dy": f"S{i}"}, f"S{i}") for i in _whole_axes(tuple(a["shape"]), a)], _grad_piece_attrs)
register_grad("strided_slice", lambda F, ctx, dy: {"in": F.strided_slice_grad(
    dy, list(ctx.inputs["in"].shape), list(ctx.attrs["begin"]), list(ctx.attrs["end"]),
    list(ctx.attrs.get("step") or [1] * ctx.inputs["in"].ndim))})


# -- broadcast_to -----------------------------------------------------------------------------
def _bt_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    d = ins["in"]
    shape = tuple(int(s) for s in attrs["shape"])
    lead = len(shape) - len(d.shape)
    if lead < 0 or any(s != 1 and s != shape[lead + i] for i, s in enumerate(d.shape)):
        raise OpError(f"cannot broadcast shape {d.shape} to {shape}")
    return {"out": BlobDesc(shape, d.dtype)}


def _bt_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    out = outs["out"]
    out[...] = ctx.xp.broadcast_to(ins["in"], out.shape)


def _bt_sbp(ins: Any, out: Any, attrs: Attrs) -> list:
    src = ins["in"]
    lead = len(out) - len(src)
    sigs = []
    for i in range(len(out)):
        j = i - lead
        sigs.append(({"in": f"S{j}" if j >= 0 and src[j] == out[i] else "B"}, f"S{i}"))
    return [*sigs, ({"in": "P"}, "P")]


register_op(OpDef("broadcast_to", ("in",), _bt_infer, _bt_kernel,
                  doc="the input repeated along size-1 and new leading axes to attr shape"))
register_sbp("broadcast_to", _bt_sbp, lambda a, piece: {**a, "shape": list(piece)})
register_grad("broadcast_to", lambda F, ctx, dy: {"in": sum_to(F, dy, ctx.inputs["in"].shape)})
