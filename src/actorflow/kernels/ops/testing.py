"""Ops for tests and benchmarks: sleep, busy, fail pass their input through; stamp is a source."""

from __future__ import annotations

import time

from actorflow.kernels.blob import BlobDesc
from actorflow.kernels.ops._infer import same
from actorflow.kernels.registry import Arrays, Attrs, Blobs, KernelContext, OpDef, register_op


def _pass(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    return same(ins["in"])


def _copy(ins: Arrays, outs: Arrays) -> None:
    outs["out"][...] = ins["in"]


def _sleep_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    only = attrs.get("only_piece")
    if only is None or only == ctx.piece_id:
        time.sleep(float(attrs.get("ms", 1.0)) / 1000.0)  # releases the GIL
    _copy(ins, outs)


def _busy_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    # Burns CPU inside numpy (which releases the GIL for large arrays).
    xp = ctx.xp
    n = int(attrs.get("size", 1 << 16))
    buf = ctx.state.get("buf")
    if buf is None or buf.shape[0] != n:
        buf = ctx.state["buf"] = xp.linspace(0.0, 1.0, n)
    for _ in range(int(attrs.get("iters", 10))):
        xp.sin(buf, out=buf)
    _copy(ins, outs)


def _fail_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    piece = attrs.get("piece", -1)
    if piece == -1 or piece == ctx.piece_id:
        raise RuntimeError(attrs.get("message", f"injected failure on piece {ctx.piece_id}"))
    _copy(ins, outs)


def _stamp_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    from actorflow.kernels.ops.generators import _constant_infer

    return _constant_infer(ins, attrs)


def _stamp_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    # Writes one element: a big regst moves between actors without its producer rewriting it.
    outs["out"].reshape(-1)[:1] = ctx.piece_id


register_op(OpDef("stamp", (), _stamp_infer, _stamp_kernel,
                  doc="a source writing only element 0 (the piece id): transport benches"))
register_op(OpDef("sleep", ("in",), _pass, _sleep_kernel, doc="sleep attrs.ms, then copy"))
register_op(OpDef("busy", ("in",), _pass, _busy_kernel, doc="burn CPU in numpy, then copy"))
register_op(OpDef("fail", ("in",), _pass, _fail_kernel, doc="raise on attrs.piece (-1: always)"))
