"""``af.autograd.Function``: an op whose forward and backward the user writes (OneFlow's and
PyTorch's ``autograd.Function``).  ``apply`` runs ``forward`` with grad mode off, then
gives the output a tape node whose rule calls ``backward`` -- so the engine, ``retain_graph``,
hooks and ``autograd.grad`` treat it like any op, in eager mode and inside a job."""

from __future__ import annotations

from typing import Any

from actorflow.errors import AutogradError
from actorflow.frontend.autograd.mode import STATE, no_grad
from actorflow.frontend.autograd.tape import AutogradMeta, Node, meta_of, set_meta


class FunctionCtx:
    """``ctx`` of ``forward``/``backward``: ``save_for_backward(*tensors)``,
    ``saved_tensors``, ``needs_input_grad``; other attributes may be set freely."""

    def __init__(self) -> None:
        self.saved_tensors: tuple[Any, ...] = ()
        self.needs_input_grad: tuple[bool, ...] = ()

    def save_for_backward(self, *tensors: Any) -> None:
        self.saved_tensors = tensors


def _requires_grad(a: Any) -> bool:
    m = meta_of(a)
    return m is not None and m.requires_grad


class Function:
    """Subclass with ``@staticmethod forward(ctx, *args)`` returning one tensor and
    ``@staticmethod backward(ctx, grad)`` returning one gradient (or None) per argument of
    ``forward``; call ``MyFunction.apply(*args)``."""

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any) -> Any:
        raise NotImplementedError("an autograd.Function needs a forward(ctx, *args)")

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Any) -> Any:
        raise NotImplementedError("an autograd.Function needs a backward(ctx, *grads)")

    @classmethod
    def apply(cls, *args: Any) -> Any:
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(_requires_grad(a) for a in args)
        with no_grad():
            out = cls.forward(ctx, *args)
        needs = frozenset(f"arg{i}" for i, n in enumerate(ctx.needs_input_grad) if n)
        if not STATE.enabled or not needs:
            return out
        if isinstance(out, (tuple, list)):
            raise AutogradError(f"{cls.__name__}.forward returned {len(out)} outputs; an "
                                "autograd.Function with several outputs is not supported")
        if any(out is a for a in args):  # the output must be a tensor of its own
            from actorflow.frontend import functional_nn as F

            with no_grad():
                out = F.identity(out)
        inputs = {f"arg{i}": a for i, a in enumerate(args) if f"arg{i}" in needs}

        def rule(F: Any, gctx: Any, dout: Any) -> dict[str, Any]:
            grads = cls.backward(ctx, dout)
            grads = tuple(grads) if isinstance(grads, (tuple, list)) else (grads,)
            if len(grads) != len(args):
                raise AutogradError(f"{cls.__name__}.backward returned {len(grads)} gradients, "
                                    f"forward took {len(args)} arguments")
            return {f"arg{i}": g for i, g in enumerate(grads)
                    if f"arg{i}" in needs and g is not None}

        set_meta(out, AutogradMeta(True, Node(cls.__name__, rule, inputs, {}, needs, out)))
        return out


__all__ = ["Function", "FunctionCtx"]
