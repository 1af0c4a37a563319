"""The autograd side of every frontend tensor: ``requires_grad``, ``grad``, ``grad_fn``,
``backward()``, ``detach()``, and in-place updates of eager tensors.

Mixed into ``TensorMethods``, so lazy, eager local and eager global tensors share it.  The
state lives in the tensor's ``_ag`` slot (``tape.AutogradMeta``), absent until autograd
touches the tensor.

Eager tensors are immutable values; an in-place update (``p.sub_(x)``, what optimizers do)
computes the new value as an op and swaps it into ``p`` (``_swap_data``): ``p`` keeps its
identity (a module's parameter, an optimizer's list) and the old value's memory is released
once the ops reading it ran.  Inside a job the same methods are ``assign`` ops on variables.
"""

from __future__ import annotations

from typing import Any

from actorflow.errors import AutogradError, UsageError
from actorflow.frontend.autograd import engine
from actorflow.frontend.autograd.mode import STATE, no_grad
from actorflow.frontend.autograd.tape import AutogradMeta, is_float, meta_of, set_meta
from actorflow.frontend.autograd.tape import start_recording as _start


class AutogradMethods:
    __slots__ = ()

    # -- state -----------------------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        m = meta_of(self)
        return bool(m is not None and m.requires_grad)

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        self.requires_grad_(flag)

    def requires_grad_(self, requires_grad: bool = True) -> Any:
        """Make this leaf record the ops that read it (``backward()`` fills its ``.grad``)."""
        m = meta_of(self)
        if m is not None and m.grad_fn is not None:
            if not requires_grad:
                raise AutogradError("you can only change requires_grad flags of leaf "
                                    "variables; use detach() to get a tensor that does not "
                                    "require grad")
            return self
        if requires_grad and not is_float(self.dtype):  # type: ignore[attr-defined]
            raise AutogradError(f"only tensors of floating point dtype can require gradients, "
                                f"not {self.dtype}")  # type: ignore[attr-defined]
        if m is None:
            if not requires_grad:
                return self
            set_meta(self, AutogradMeta(True))
        else:
            m.requires_grad = bool(requires_grad)
        if requires_grad:
            _start()
        return self

    @property
    def grad(self) -> Any:
        m = meta_of(self)
        return None if m is None else m.grad

    @grad.setter
    def grad(self, value: Any) -> None:
        if value is not None and tuple(value.shape) != tuple(self.shape):  # type: ignore[attr-defined]
            raise AutogradError(f"assigned grad has shape {tuple(value.shape)}, the tensor "
                                f"{tuple(self.shape)}")  # type: ignore[attr-defined]
        m = meta_of(self)
        if m is None:
            if value is None:
                return
            m = AutogradMeta(False)
            set_meta(self, m)
        m.grad = value

    @property
    def grad_fn(self) -> Any:
        m = meta_of(self)
        return None if m is None else m.grad_fn

    @property
    def is_leaf(self) -> bool:
        m = meta_of(self)
        return m is None or m.grad_fn is None

    def retain_grad(self) -> None:
        """Keep this non-leaf tensor's gradient in ``.grad`` after ``backward()``."""
        m = meta_of(self)
        if m is None or not m.requires_grad:
            raise AutogradError("can't retain_grad on a tensor that has requires_grad=False")
        m.retains_grad = True

    def register_hook(self, hook: Any) -> Any:
        """``hook(grad)`` runs when this tensor's gradient is computed and may return a
        replacement (a leaf's hook runs before the gradient is added to ``.grad``)."""
        m = meta_of(self)
        if m is None or not m.requires_grad:
            raise AutogradError("cannot register a hook on a tensor that doesn't require "
                                "gradient")
        if m.hooks is None:
            m.hooks = []
        m.hooks.append(hook)
        return hook

    def clone(self) -> Any:
        """A copy (an ``identity`` op, so gradients flow through it)."""
        from actorflow.frontend import functional_nn as F

        return F.identity(self)

    # -- backward --------------------------------------------------------------------------
    def backward(self, gradient: Any = None, retain_graph: bool = False,
                 create_graph: bool = False) -> None:
        """Add the gradient of this tensor with respect to every leaf that requires grad to
        the leaf's ``.grad`` (issued, not waited for: ``.grad.numpy()`` waits)."""
        if create_graph:
            raise AutogradError("backward(create_graph=True) (higher-order gradients) is not "
                                "supported")
        if getattr(self, "interpreter", "") == "lazy":  # the job: micro-batches change it
            self.job.backward(self, gradient, retain_graph)  # type: ignore[attr-defined]
            return
        engine.run_backward([self], [gradient], retain_graph)

    def detach(self) -> Any:
        """The same values, cut from the graph (a new tensor that does not require grad)."""
        from actorflow.frontend import functional_nn as F

        with no_grad():
            return F.identity(self)

    @property
    def data(self) -> Any:
        return self.detach()

    # -- in-place updates --------------------------------------------------------------------
    def _inplace(self, value: Any, what: str) -> Any:
        if getattr(self, "interpreter", "") == "lazy":
            from actorflow.frontend import functional_nn as F

            return F.assign(self, value)
        m = meta_of(self)
        if m is not None and m.requires_grad and STATE.enabled:
            raise AutogradError(f"{what}: a leaf tensor that requires grad is being used in an "
                                "in-place operation (do it under af.no_grad())" if
                                m.grad_fn is None else f"{what}: an in-place operation on a "
                                "tensor recorded for backward")
        if tuple(value.shape) != tuple(self.shape):  # type: ignore[attr-defined]
            raise UsageError(f"{what}: value of shape {tuple(value.shape)} for a tensor of "
                             f"shape {tuple(self.shape)}")  # type: ignore[attr-defined]
        swap = getattr(self, "_swap_data", None)
        if swap is None:
            raise UsageError(f"{what}: {type(self).__name__} cannot change in place")
        from actorflow.frontend import functional_nn as F

        with no_grad():
            if value.dtype != self.dtype:  # type: ignore[attr-defined]
                value = F.cast(value, self.dtype)  # type: ignore[attr-defined]
            else:
                value = F.identity(value)  # a value of its own: the swap gives it away
        swap(value)
        if m is not None and m.param is not None:
            m.param.changed()  # a job tracing it now takes its values, not its initializer
        return self

    def assign_(self, value: Any) -> Any:
        """Set this tensor (a job's variable, or an eager tensor) to ``value``."""
        return self._inplace(_as_tensor(self, value), "assign_")

    def copy_(self, value: Any) -> Any:
        return self._inplace(_as_tensor(self, value), "copy_")

    def add_(self, other: Any, alpha: float = 1.0) -> Any:
        from actorflow.frontend import functional_nn as F

        with no_grad():
            v = F.add(self, other if alpha == 1.0 else F.mul(other, alpha))
        return self._inplace(v, "add_")

    def sub_(self, other: Any, alpha: float = 1.0) -> Any:
        from actorflow.frontend import functional_nn as F

        with no_grad():
            v = F.sub(self, other if alpha == 1.0 else F.mul(other, alpha))
        return self._inplace(v, "sub_")

    def mul_(self, other: Any) -> Any:
        from actorflow.frontend import functional_nn as F

        with no_grad():
            v = F.mul(self, other)
        return self._inplace(v, "mul_")

    def div_(self, other: Any) -> Any:
        from actorflow.frontend import functional_nn as F

        with no_grad():
            v = F.div(self, other)
        return self._inplace(v, "div_")

    def zero_(self) -> Any:
        from actorflow.frontend import functional_nn as F

        with no_grad():
            v = F.fill_like(self, 0.0)
        return self._inplace(v, "zero_")

    def fill_(self, value: float) -> Any:
        from actorflow.frontend import functional_nn as F

        with no_grad():
            v = F.fill_like(self, float(value))
        return self._inplace(v, "fill_")


def _as_tensor(like: Any, value: Any) -> Any:
    if isinstance(value, (int, float)):
        from actorflow.frontend import functional_nn as F

        with no_grad():
            return F.fill_like(like, float(value))
    return value


__all__ = ["AutogradMethods"]
