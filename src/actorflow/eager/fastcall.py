"""The fast path's hit, in front of a functional op's whole way (Python reference).

``FastCall`` is the base class of ``frontend.signature.FunctionalOp``: ``__call__`` makes
the call's key (``call_key``), looks up a ``FastPlan`` (``frontend/fastpath.py`` builds
them) and runs its issue plan; anything else goes to ``_slow``.  The compiled core's
``FastCall`` does the same in C.
"""

from __future__ import annotations

from typing import Any

_TENSOR_TYPE: list[Any] = [None]  # the eager local tensor class (set by the frontend)
_HOOK: list[Any] = [None]  # the autograd tape's issue hook (frontend.dispatch.set_issue_hook)


def set_tensor_type(t: type) -> None:
    _TENSOR_TYPE[0] = t


def set_issue_hook(fn: Any) -> None:
    _HOOK[0] = fn


class FastPlan:
    """What a hit does: take the input tensors and per-call scalars from the arguments
    (by position, or by keyword name) and run the issue plan."""

    __slots__ = ("iplan", "positions", "scalar_attr", "scalar_conv", "scalar_pos")

    def __init__(self, iplan: Any, positions: tuple, scalar_attr: str | None,
                 scalar_pos: Any, scalar_conv: Any) -> None:
        self.iplan = iplan
        self.positions = positions
        self.scalar_attr = scalar_attr
        self.scalar_pos = scalar_pos
        self.scalar_conv = scalar_conv



def call_key(tensor_type: Any, args: tuple, kwargs: dict[str, Any]) -> tuple:
    """The cache key of a call (see the module docstring); TypeError if unhashable."""
    key: list[Any] = []
    for a in args:
        t = type(a)
        key.append(t)
        if t is tensor_type:
            key.append(a._blob.meta)
        elif t is not float:
            key.append(a)
    for name, a in kwargs.items():
        t = type(a)
        key.append(name)
        key.append(t)
        if t is tensor_type:
            key.append(a._blob.meta)
        elif t is not float:
            key.append(a)
    k = tuple(key)
    hash(k)  # TypeError for an unhashable argument: no fast path for this call
    return k


class FastCall:
    """Base of functional ops: the fast path in front of ``_slow`` (the whole way)."""

    _fast: dict

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            key = call_key(_TENSOR_TYPE[0], args, kwargs)
        except TypeError:
            return self._slow(None, args, kwargs)
        plan = self._fast.get(key)
        if plan is not None:
            ip = plan.iplan
            if ip.vm.closed:  # the VM it was made for was shut down
                return self._slow(key, args, kwargs)
            ts = []
            for p in plan.positions:
                ts.append(args[p] if type(p) is int else kwargs[p])
            attrs = ip.attrs
            if plan.scalar_attr is not None:
                p = plan.scalar_pos
                v = args[p] if type(p) is int else kwargs[p]
                attrs = dict(attrs)
                attrs[plan.scalar_attr] = v if plan.scalar_conv is None else plan.scalar_conv(v)
            out = ip.run(ts, attrs)
            if _HOOK[0] is not None:
                _HOOK[0](ip.expr, dict(zip(ip.in_names, ts)), attrs, out)
            return out
        return self._slow(key, args, kwargs)

    def _slow(self, key: Any, args: tuple, kwargs: dict[str, Any]) -> Any:
        raise NotImplementedError



__all__ = ["FastCall", "FastPlan", "call_key", "set_issue_hook", "set_tensor_type"]
