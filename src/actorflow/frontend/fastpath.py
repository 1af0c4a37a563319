"""Dispatch in one step: a functional call cached by the types and metas of its arguments.

A functional op's first call with a new combination goes the whole way (signature
binding, conversion, op expression, interpreter, inference).  When the signature that
bound is implemented by a ``Direct`` (an op expression plus which parameters are its
inputs and attrs, said as data) and every tensor argument is an eager local tensor, the
call leaves a ``FastPlan`` keyed by ``call_key(args, kwargs)``: per argument its type and
then, for a tensor, its blob's interned meta (shape, dtype, device); for a float nothing
more (a ``Scalar`` attr reads it per call: inference looks at its type only); for any
other value the value itself.  The next call with that key is one dict lookup and one
call of the eager interpreter's ``IssuePlan.run``.  A miss, an unhashable argument, a
lazy or global tensor, or a numpy argument takes the whole way, so errors are unchanged.

``FastCall`` (``eager/fastcall.py``, or the compiled core's, which does the same in C) is
the base class of ``FunctionalOp``: the lookup and the hit; this module says what a plan
holds and builds one (``remember``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_MISS = object()
PLAN_LIMIT = 256  # plans per functional op (a loop over many shapes refills it)


class Direct:
    """An op implementation said as data: ``expr(inputs, attrs)`` with ``inputs`` (op
    input name -> parameter) and ``attrs`` (attr name -> parameter) taken from the bound
    parameters, ``const`` attrs fixed; ``scalars`` names the attrs inference reads by
    type only (so the fast path reads them per call); ``require`` (parameter -> (value,
    check)) runs ``check`` when a parameter differs from its only fast value."""

    def __init__(self, expr: Any, inputs: dict[str, str], attrs: dict[str, str] | None = None,
                 const: dict[str, Any] | None = None, scalars: tuple[str, ...] = (),
                 require: dict[str, tuple[Any, Callable[[Any], None]]] | None = None) -> None:
        self.expr = expr
        self.inputs = inputs
        self.attrs = attrs or {}
        self.const = const or {}
        self.scalars = scalars
        self.require = require or {}

    def __call__(self, **kw: Any) -> Any:
        for p, (value, check) in self.require.items():
            if kw[p] != value:
                check(kw[p])
        attrs = dict(self.const)
        for a, p in self.attrs.items():
            attrs[a] = kw[p]
        return self.expr({k: kw[p] for k, p in self.inputs.items()}, attrs)


class Pick:
    """An implementation that chooses one of several ``Direct`` forms from the bound
    arguments (e.g. by rank); the choice may read only what the key holds (tensor shapes,
    dtypes and devices, non-float values), so a cached plan stays right."""

    def __init__(self, choose: Callable[[dict[str, Any]], Direct]) -> None:
        self.choose = choose

    def __call__(self, **kw: Any) -> Any:
        return self.choose(kw)(**kw)


def remember(op: Any, key: Any, sig: Any, fn: Any, args: tuple, kwargs: dict[str, Any],
             bound: dict[str, Any], tensor_type: type, plan_for: Callable[..., Any],
             make: Callable[..., Any]) -> None:
    """Leave a fast plan for ``key`` after ``fn`` (a ``Direct``) ran a call of ``op``
    through signature ``sig`` with converted arguments ``bound``, if the key says enough:
    every input an eager local tensor, every float argument a per-call scalar, at most
    one scalar.  ``plan_for(expr, tensors, attrs)`` gives the issue plan; ``make`` is the
    core's ``FastPlan``."""
    if isinstance(fn, Pick):
        fn = fn.choose(bound)
    if key is None or not isinstance(fn, Direct) or len(op._fast) >= PLAN_LIMIT \
            or len(fn.scalars) > 1:
        return
    where: dict[str, Any] = {}  # parameter -> position in the call (index or keyword)
    positional = [p for p in sig.params if not p.keyword_only]
    for i, p in enumerate(positional[:len(args)]):
        where[p.name] = i
    for k in kwargs:
        where[k] = k
    scalar_params = {fn.attrs[a] for a in fn.scalars}
    for name, pos in where.items():
        v = args[pos] if type(pos) is int else kwargs[pos]
        if type(v) is float and name not in scalar_params:
            return  # the key does not hold this float's value
    order = fn.expr.opdef.inputs
    tensors = [bound[fn.inputs[k]] for k in order]
    if any(type(t) is not tensor_type for t in tensors) \
            or any(fn.inputs[k] not in where for k in order):
        return
    attrs = dict(fn.const)
    for a, p in fn.attrs.items():
        attrs[a] = bound[p]
    scalar_attr = scalar_pos = conv = None
    if fn.scalars:
        scalar_attr = fn.scalars[0]
        p = fn.attrs[scalar_attr]
        if p not in where:
            scalar_attr = None  # a default: fixed by the key like any other
        else:
            scalar_pos = where[p]
            v = args[scalar_pos] if type(scalar_pos) is int else kwargs[scalar_pos]
            if type(v) not in (float, int):
                param = next(q for q in sig.params if q.name == p)
                conv = _converter(param.type)
    iplan = plan_for(fn.expr, tensors, attrs)
    op._fast[key] = make(iplan, tuple(where[fn.inputs[k]] for k in order), scalar_attr,
                         scalar_pos, conv)


def _converter(type_name: str) -> Any:
    from actorflow.frontend.signature import _CONVERTERS

    return _CONVERTERS[type_name]


__all__ = ["Direct", "Pick", "remember"]
