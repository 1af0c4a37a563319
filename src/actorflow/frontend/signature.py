"""Functional ops declared once with signature strings, dispatched by trying them in order.

    pow = define("pow", [
        ("Tensor (Tensor input, Tensor exponent)", _pow_tt),
        ("Tensor (Tensor input, Scalar exponent)", _pow_ts),
    ])

A call binds positional, keyword, default and keyword-only (after ``*``) arguments and
converts each value with its type's converter (``Scalar`` takes numbers, ``Tensor`` takes
tensors and numpy arrays or nested lists, ``IntList`` takes an int or a sequence of ints,
``T?`` also takes None).  The first signature that binds runs.  When none does, a one-
signature op names the bad argument; a many-signature op lists all of them.
"""

from __future__ import annotations

import ast
import inspect
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from actorflow.eager.core import FastCall, FastPlan
from actorflow.errors import ArgumentTypeError, UsageError
from actorflow.frontend.fastpath import remember

_MISSING = object()


class ArrayArg:
    """A numpy value passed where a Tensor is expected; turned into a constant later."""

    __slots__ = ("value",)

    def __init__(self, value: np.ndarray) -> None:
        self.value = value


class _NoMatch(Exception):
    """Internal: a signature does not bind; the message is the user-facing reason."""


# -- converters by type name ---------------------------------------------------------------
Converter = Callable[[Any], Any]  # returns the converted value or raises _NoMatch
_CONVERTERS: dict[str, Converter] = {}
_TENSOR_TYPES: tuple[type, ...] = ()


def register_type(name: str, fn: Converter) -> None:
    _CONVERTERS[name] = fn


def set_tensor_types(*types: type) -> None:
    """The frontend tells this module which classes are tensors (keeps imports one-way)."""
    global _TENSOR_TYPES
    _TENSOR_TYPES = types


def is_tensor(v: Any) -> bool:
    """Whether ``v`` is a tensor of a class given to ``set_tensor_types``."""
    return isinstance(v, _TENSOR_TYPES)


def _fail() -> Any:
    raise _NoMatch


def _tensor(v: Any) -> Any:
    if isinstance(v, _TENSOR_TYPES):
        return v
    if isinstance(v, np.ndarray):
        return ArrayArg(v)
    if isinstance(v, (list, tuple)) and v:
        try:
            arr = np.asarray(v)
        except ValueError:
            return _fail()
        if arr.dtype.kind in "biuf":
            return ArrayArg(arr)
    return _fail()


def _scalar(v: Any) -> Any:
    t = type(v)
    if t is float or t is int:  # the common case, before the slower ABC checks
        return v
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, numbers.Real):
        return float(v)
    if isinstance(v, np.ndarray) and v.ndim == 0 and v.dtype.kind in "biuf":
        return v.item()
    return _fail()


def _int(v: Any) -> int:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
        return _fail()
    return int(v)


def _float(v: Any) -> float:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
        return _fail()
    return float(v)


def _bool(v: Any) -> bool:
    return bool(v) if isinstance(v, (bool, np.bool_)) else _fail()


def _int_list(v: Any) -> tuple[int, ...]:
    if isinstance(v, numbers.Integral) and not isinstance(v, bool):
        return (int(v),)
    if isinstance(v, (list, tuple)):
        return tuple(_int(x) for x in v)
    return _fail()


def _dtype(v: Any) -> str:
    if isinstance(v, (str, np.dtype, type)):
        try:
            return np.dtype(v).name
        except TypeError:
            return _fail()
    return _fail()


def _string(v: Any) -> str:
    return v if isinstance(v, str) else _fail()


def _dict(v: Any) -> dict:
    return v if isinstance(v, dict) else _fail()


def _tensor_list(v: Any) -> list[Any]:
    if isinstance(v, (list, tuple)) and v:
        return [_tensor(x) for x in v]
    return _fail()


for _n, _f in {"Tensor": _tensor, "Scalar": _scalar, "Int": _int, "Float": _float,
               "Bool": _bool, "IntList": _int_list, "DataType": _dtype, "String": _string,
               "Dict": _dict,
               "TensorList": _tensor_list}.items():
    register_type(_n, _f)


_TYPE_KEYED = (int, float, bool, type(None), np.ndarray)  # converters decide on type alone


def _positional_names(fn: Callable[..., Any]) -> list[str] | None:
    """The names of ``fn``'s parameters if all can be passed by position, else None."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD for p in params):
        return None
    return [p.name for p in params]


# -- parsing -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Param:
    type: str  # without the trailing "?"
    name: str
    optional: bool  # "T?": None is allowed
    default: Any  # _MISSING when required
    keyword_only: bool


@dataclass(frozen=True)
class Signature:
    text: str
    returns: str
    params: tuple[Param, ...]

    @property
    def max_positional(self) -> int:
        return sum(1 for p in self.params if not p.keyword_only)


def _split_params(body: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in body:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def parse_signature(text: str) -> Signature:
    """``"Tensor (Tensor input, Scalar exponent, *, Bool inplace=False)"`` -> Signature."""
    head, sep, rest = text.partition("(")
    if not sep or not rest.rstrip().endswith(")"):
        raise UsageError(f"signature {text!r}: expected 'Ret (Type name, ...)'")
    params: list[Param] = []
    kw_only = False
    for part in _split_params(rest.rstrip()[:-1]):
        if part == "*":
            kw_only = True
            continue
        decl, eq, default = part.partition("=")
        bits = decl.split()
        if len(bits) != 2:
            raise UsageError(f"signature {text!r}: parameter {part!r} must be 'Type name'")
        typ, name = bits
        optional = typ.endswith("?")
        typ = typ.rstrip("?")
        if typ not in _CONVERTERS:
            raise UsageError(f"signature {text!r}: unknown type {typ!r}; known: "
                             f"{', '.join(sorted(_CONVERTERS))}")
        value = _MISSING
        if eq:
            value = ast.literal_eval(default.strip())
        params.append(Param(typ, name, optional, value, kw_only))
    return Signature(text, head.strip(), tuple(params))


# -- binding and dispatch --------------------------------------------------------------------
def _type_name(v: Any) -> str:
    t = type(v)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def bind(sig: Signature, fname: str, args: Sequence[Any], kwargs: dict[str, Any]) -> dict:
    """Converted arguments by name, or ``_NoMatch`` with the reason."""
    if len(args) > sig.max_positional:
        raise _NoMatch(f"{fname}(): takes {sig.max_positional} positional arguments but "
                       f"{len(args)} were given")
    names = {p.name for p in sig.params}
    for k in kwargs:
        if k not in names:
            raise _NoMatch(f"{fname}(): got an unexpected keyword argument '{k}'")
    out: dict[str, Any] = {}
    positional = [p for p in sig.params if not p.keyword_only]
    for p, v in zip(positional, args):
        if p.name in kwargs:
            raise _NoMatch(f"{fname}(): got multiple values for argument '{p.name}'")
        out[p.name] = _convert(p, v, fname)
    for p in sig.params:
        if p.name in out:
            continue
        if p.name in kwargs:
            out[p.name] = _convert(p, kwargs[p.name], fname)
        elif p.default is not _MISSING:
            out[p.name] = p.default
        else:
            raise _NoMatch(f"{fname}(): missing required argument '{p.name}'")
    return out


def _convert(p: Param, v: Any, fname: str) -> Any:
    if v is None and p.optional:
        return None
    try:
        return _CONVERTERS[p.type](v)
    except _NoMatch:
        shown = "tensor" if p.type == "Tensor" else p.type  # OneFlow's word for a tensor
        raise _NoMatch(f"{fname}(): argument '{p.name}' must be {shown}, not "
                       f"{_type_name(v)}") from None


_FAST_TENSOR: list[Any] = [None, None]  # (eager tensor class, plan_for): eager_tensor.py


class FunctionalOp(FastCall):
    """A callable op with several signatures; ``finalize`` turns ArrayArgs into tensors.

    A call first tries the fast path (``FastCall``: a plan cached by the arguments' types
    and metas, ``fastpath.py``); ``_slow`` is the whole way, and leaves such a plan."""

    def __init__(self, name: str, overloads: list[tuple[str, Callable[..., Any]]],
                 finalize: Callable[[dict], dict] | None = None, doc: str = "") -> None:
        self.__name__ = name
        self.overloads = [(parse_signature(s), fn) for s, fn in overloads]
        self.finalize = finalize
        self._plans: dict[tuple, tuple] = {}  # argument types -> how to bind (see _remember)
        self._fast: dict[tuple, Any] = {}  # call key -> FastPlan (fastpath.py)
        lines = "\n".join(f"    {s.text}" for s, _ in self.overloads)
        self.__doc__ = f"{doc}\n\nSignatures:\n{lines}" if doc else f"Signatures:\n{lines}"

    @property
    def signatures(self) -> list[str]:
        return [s.text for s, _ in self.overloads]

    def _remember(self, key: tuple, sig: Signature, fn: Callable[..., Any], args: Sequence[Any],
                  kwargs: dict[str, Any]) -> None:
        """Cache the binding of these argument *types* when the converters' outcome
        depends on the types alone (tensors, numbers, None, arrays): the next call with
        the same types binds without trying the earlier signatures again."""
        values = [*args, *kwargs.values()]
        if len(self._plans) >= 256 or not all(
                type(v) in _TYPE_KEYED or isinstance(v, _TENSOR_TYPES) for v in values):
            return
        params = {p.name: p for p in sig.params}
        positional = [p for p in sig.params if not p.keyword_only]

        def conv(p: Param, v: Any) -> Any:
            if v is None or (p.type == "Tensor" and isinstance(v, _TENSOR_TYPES)):
                return None  # kept as is
            return _CONVERTERS[p.type]

        convs = [(p.name, conv(p, v)) for p, v in zip(positional, args)]
        convs += [(k, conv(params[k], v)) for k, v in kwargs.items()]
        given = {n for n, _ in convs}
        defaults = {p.name: p.default for p in sig.params if p.name not in given}
        finalize = self.finalize is not None and any(isinstance(v, np.ndarray) for v in values)
        if not kwargs and not finalize and _positional_names(fn) == [p.name for p in sig.params]:
            # the implementation takes the signature's parameters in order: call it with
            # the converted arguments and the remaining defaults, no dict in between
            rest = tuple(p.default for p in sig.params[len(args):])
            self._plans[key] = (fn, [c for _, c in convs], rest, None, sig)
            return
        self._plans[key] = (fn, convs, defaults, finalize, sig)

    def _slow(self, fast_key: Any, args: tuple, kwargs: dict[str, Any]) -> Any:
        key = (*map(type, args), *kwargs)
        plan = self._plans.get(key)
        if plan is not None:  # these argument types bound before: skip the search
            fn, convs, defaults, finalize, sig = plan
            if finalize is None:  # positional plan (see _remember)
                try:
                    call = []
                    for conv, v in zip(convs, args):
                        call.append(v if conv is None else conv(v))
                except _NoMatch:
                    pass
                else:
                    return fn(*call, *defaults)
            try:
                bound = dict(defaults)
                for (name, conv), v in zip(convs, (*args, *kwargs.values())):
                    bound[name] = v if conv is None else conv(v)
            except _NoMatch:
                pass
            else:
                if finalize and self.finalize is not None:
                    bound = self.finalize(bound)
                out = fn(**bound)
                if fast_key is not None and _FAST_TENSOR[0] is not None:
                    remember(self, fast_key, sig, fn, args, kwargs, bound, _FAST_TENSOR[0],
                             _FAST_TENSOR[1], FastPlan)
                return out
        for sig, fn in self.overloads:
            try:
                bound = bind(sig, self.__name__, args, kwargs)
            except _NoMatch as e:
                if len(self.overloads) == 1:
                    raise ArgumentTypeError(str(e)) from None
                continue
            self._remember(key, sig, fn, args, kwargs)
            if self.finalize is not None:
                bound = self.finalize(bound)
            out = fn(**bound)
            if fast_key is not None and _FAST_TENSOR[0] is not None:
                remember(self, fast_key, sig, fn, args, kwargs, bound, _FAST_TENSOR[0],
                         _FAST_TENSOR[1], FastPlan)
            return out
        listing = "\n".join(f"\t*{i}: {s.text}" for i, (s, _) in enumerate(self.overloads))
        raise ArgumentTypeError(f"{self.__name__}(): received an invalid combination of arguments. "
                                f"The valid signatures are:\n{listing}")

    def __repr__(self) -> str:
        return f"<functional op {self.__name__}>"


__all__ = ["ArrayArg", "FunctionalOp", "Param", "Signature", "bind", "is_tensor",
           "parse_signature", "register_type", "set_tensor_types"]
