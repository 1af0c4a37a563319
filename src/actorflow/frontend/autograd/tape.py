"""The tape: what ``backward()`` walks, recorded as ops are issued.

Every op call goes through one hook (``dispatch.set_issue_hook``), set here when the first
tensor gets ``requires_grad=True`` and left unset before that, so a program that never
trains pays one pointer test per op.  When an op's inputs include a tensor that requires
grad (and grad mode is on), its outputs get a ``Node``: the op type, its gradient rule,
the input tensors (kept for the rule) and attrs.  A tensor's autograd state lives in one
slot, ``_ag`` (``AutogradMeta``), of the frontend's tensor classes (seed 002: the tensor
faces Python and autograd, the blob below it the data).  The same hook records lazy
tensors inside ``with af.Job``, so the graph-mode backward walks the same tape.
"""

from __future__ import annotations

import itertools
from typing import Any

from actorflow.frontend import dispatch
from actorflow.frontend.autograd.mode import STATE
from actorflow.kernels.grad import GRADS, GradRule

_seq = itertools.count()


class AutogradMeta:
    """Autograd state of one tensor: a leaf has no ``grad_fn``."""

    __slots__ = ("grad", "grad_fn", "hooks", "param", "requires_grad", "retains_grad")

    def __init__(self, requires_grad: bool, grad_fn: Node | None = None) -> None:
        self.requires_grad = requires_grad
        self.grad_fn = grad_fn
        self.grad: Any = None
        self.retains_grad = False
        self.hooks: list[Any] | None = None  # register_hook: fn(grad) -> grad or None
        self.param: Any = None  # a module's parameter: its ParamInfo (actorflow.nn)


class Node:
    """One recorded op: how to send its output's gradient on to its inputs."""

    __slots__ = ("attrs", "inputs", "needs", "op_type", "out_dtype", "out_shape", "released",
                 "rule", "seq")

    def __init__(self, op_type: str, rule: GradRule | None, inputs: dict[str, Any],
                 attrs: dict[str, Any], needs: frozenset[str], out: Any) -> None:
        self.op_type = op_type
        self.rule = rule
        self.inputs: dict[str, Any] | None = inputs
        self.attrs = attrs
        self.needs = needs
        self.out_shape = tuple(out.shape)
        self.out_dtype = out.dtype
        self.released = False
        self.seq = next(_seq)  # issue order: a later node never feeds an earlier one

    def name(self) -> str:
        return f"{self.op_type.title().replace('_', '')}Backward"

    def __repr__(self) -> str:
        return f"<{self.name()}>"


def meta_of(t: Any) -> AutogradMeta | None:
    return getattr(t, "_ag", None)


def is_float(dtype: Any) -> bool:
    return str(dtype).startswith(("float", "bfloat"))


def record(expr: Any, inputs: dict[str, Any], attrs: dict[str, Any], out: Any) -> None:
    """The issue hook: give ``out`` a grad_fn when an input requires grad."""
    if not STATE.enabled:
        return
    needs = []
    for k, t in inputs.items():
        m = getattr(t, "_ag", None)
        if m is not None and m.requires_grad:
            needs.append(k)
    if not needs:
        return
    outs = out if isinstance(out, tuple) else (out,)
    if len(outs) != 1 or out is None or not is_float(outs[0].dtype):
        return  # integer / bool results (comparisons, argmax) carry no gradient
    op_type = expr.op_type
    rule = GRADS.get(op_type) if op_type in GRADS else None
    node = Node(op_type, rule, dict(inputs), dict(attrs), frozenset(needs), outs[0])
    set_meta(outs[0], AutogradMeta(True, node))


def set_meta(t: Any, meta: AutogradMeta | None) -> None:
    try:
        t._ag = meta
    except AttributeError:
        raise TypeError(f"{type(t).__name__} cannot take part in autograd (no '_ag' slot)") \
            from None


def start_recording() -> None:
    """Install the hook (idempotent): from now on every op checks its inputs."""
    if dispatch.ISSUE_HOOK is not record:
        dispatch.set_issue_hook(record)


__all__ = ["AutogradMeta", "Node", "meta_of", "record", "set_meta", "start_recording"]
