"""``batch_matmul``: ``a @ b`` over the last two axes, broadcasting the batch axes (what
``@`` does on 3-D and higher tensors, attention's ``q @ k^T``)."""

from __future__ import annotations

from typing import Any

from actorflow.errors import OpError
from actorflow.kernels.blob import BlobDesc
from actorflow.kernels.grad import register_grad, sum_to
from actorflow.kernels.ops._infer import broadcast_shape, result_dtype
from actorflow.kernels.registry import Arrays, Attrs, Blobs, KernelContext, OpDef, register_op
from actorflow.kernels.sbp import register_sbp


def _mk(shape: tuple[int, ...], t: bool) -> tuple[int, int]:
    return (shape[-1], shape[-2]) if t else (shape[-2], shape[-1])


def _bmm_infer(ins: Blobs, attrs: Attrs) -> dict[str, BlobDesc]:
    a, b = ins["a"].shape, ins["b"].shape
    if len(a) < 2 or len(b) < 2:
        raise OpError(f"batch_matmul takes inputs of rank >= 2, got {a} and {b}")
    m, k1 = _mk(a, bool(attrs.get("transpose_a")))
    k2, n = _mk(b, bool(attrs.get("transpose_b")))
    if k1 != k2:
        raise OpError(f"inner dimensions differ: a {a} and b {b} (k {k1} != {k2})")
    batch = broadcast_shape(a[:-2], b[:-2])
    return {"out": BlobDesc((*batch, m, n), result_dtype(ins["a"].dtype, ins["b"].dtype))}


def _t(x: Any, flag: Any) -> Any:
    return x.swapaxes(-1, -2) if flag else x


def _bmm_kernel(ctx: KernelContext, ins: Arrays, outs: Arrays, attrs: Attrs) -> None:
    ctx.xp.matmul(_t(ins["a"], attrs.get("transpose_a")), _t(ins["b"], attrs.get("transpose_b")),
                  out=outs["out"])


register_op(OpDef("batch_matmul", ("a", "b"), _bmm_infer, _bmm_kernel,
                  doc="matmul over the last two axes; batch axes broadcast"))


def _bmm_sbp(ins: Any, out: Any, attrs: Attrs) -> list:
    a, b = ins["a"], ins["b"]
    ta, tb = bool(attrs.get("transpose_a")), bool(attrs.get("transpose_b"))
    nb = len(out) - 2
    sigs = []
    for i in range(nb):  # batch axes: each operand split there if it has that axis whole
        codes = {}
        for k, s in (("a", a), ("b", b)):
            j = i - (nb - (len(s) - 2))
            codes[k] = f"S{j}" if j >= 0 and s[j] == out[i] else "B"
        sigs.append((codes, f"S{i}"))
    am, ak = (len(a) - 1, len(a) - 2) if ta else (len(a) - 2, len(a) - 1)
    bk, bn = (len(b) - 1, len(b) - 2) if tb else (len(b) - 2, len(b) - 1)
    sigs += [({"a": f"S{am}", "b": "B"}, f"S{nb}"), ({"a": "B", "b": f"S{bn}"}, f"S{nb + 1}"),
             ({"a": f"S{ak}", "b": f"S{bk}"}, "P"), ({"a": "P", "b": "B"}, "P"),
             ({"a": "B", "b": "P"}, "P")]
    return sigs


register_sbp("batch_matmul", _bmm_sbp)


def matmul_grads(F: Any, ctx: Any, dy: Any, mm: Any) -> dict[str, Any]:
    """Gradients of ``a @ b`` with transpose flags, for ``matmul`` and ``batch_matmul``
    (``mm(x, y, ta, tb)`` issues the product)."""
    a, b = ctx.inputs["a"], ctx.inputs["b"]
    ta, tb = bool(ctx.attrs.get("transpose_a")), bool(ctx.attrs.get("transpose_b"))
    out = {}
    if "a" in ctx.needs:
        if ta:
            da = mm(b, dy, tb, True)
        else:
            da = mm(dy, b, False, not tb)
        out["a"] = sum_to(F, da, a.shape)
    if "b" in ctx.needs:
        if tb:
            db = mm(dy, a, True, ta)
        else:
            db = mm(a, dy, not ta, False)
        out["b"] = sum_to(F, db, b.shape)
    return out


register_grad("batch_matmul", lambda F, ctx, dy: matmul_grads(
    F, ctx, dy, lambda x, y, ta, tb: F.matmul(x, y, transpose_a=ta, transpose_b=tb)))
