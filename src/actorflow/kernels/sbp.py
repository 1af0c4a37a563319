"""SBP signatures per op type: which input/output layouts an op can run on, piece-wise.

A signature says, for each input argument, the SBP its pieces must have, and the SBP of
the output that running the kernel on those pieces gives: ``({"a": "S0", "b": "B"}, "S0")``
for a data-parallel matmul.  SBPs are codes: ``"S<axis>"``, ``"B"``, ``"P"``.  An op with
no rule only runs all-broadcast (always correct, never parallel).  Rules also say how to
rewrite attrs that name a shape when the op runs on a piece (reshape).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from actorflow.registry import Registry

Shape = tuple[int, ...]
Signature = tuple[dict[str, str], str]
Attrs = Mapping[str, Any]
RuleFn = Callable[[Mapping[str, Shape], Shape, Attrs], list[Signature]]
AttrFn = Callable[[Attrs, Shape], dict[str, Any]]

RULES: Registry[RuleFn] = Registry("SBP rule for op type")
ATTRS: Registry[AttrFn] = Registry("piece attrs rule for op type")


def register_sbp(op_types: list[str] | str, rule: RuleFn, attrs: AttrFn | None = None) -> None:
    """The signatures of ``op_types`` (and how their attrs change on a piece); an op type
    given a second rule is refused."""
    for t in [op_types] if isinstance(op_types, str) else op_types:
        RULES.register(t, rule)
        if attrs is not None:
            ATTRS.register(t, attrs)


def signatures(op_type: str, ins: Mapping[str, Shape], out: Shape,
               attrs: Mapping[str, Any]) -> list[Signature]:
    """Every signature the op allows, all-broadcast last (it is always allowed)."""
    sigs = list(RULES.get(op_type)(ins, out, attrs)) if op_type in RULES else []
    sigs.append(({k: "B" for k in ins}, "B"))
    return sigs


def physical_attrs(op_type: str, attrs: Mapping[str, Any], piece_shape: Shape) -> dict[str, Any]:
    """Attrs for running the op on one piece whose output has ``piece_shape``."""
    return ATTRS.get(op_type)(attrs, piece_shape) if op_type in ATTRS else dict(attrs)


# -- rules ----------------------------------------------------------------------------------
def _unary(linear: bool) -> RuleFn:
    def rule(ins: Mapping[str, Shape], out: Shape, attrs: Attrs) -> list[Signature]:
        (arg,) = ins
        sigs = [({arg: f"S{i}"}, f"S{i}") for i in range(len(out))]
        if linear:
            sigs.append(({arg: "P"}, "P"))
        return sigs
    return rule


def _split_map(shape: Shape, out: Shape, axis: int) -> str:
    """SBP an input of ``shape`` needs so that the broadcast output is split on ``axis``."""
    i = axis - (len(out) - len(shape))
    return f"S{i}" if i >= 0 and shape[i] == out[axis] else "B"


def _elementwise(partial: list[dict[str, str]]) -> RuleFn:
    def rule(ins: Mapping[str, Shape], out: Shape, attrs: Attrs) -> list[Signature]:
        sigs = [({k: _split_map(s, out, ax) for k, s in ins.items()}, f"S{ax}")
                for ax in range(len(out))]
        return sigs + [(dict(p), "P") for p in partial]
    return rule


def _matmul(ins: Mapping[str, Shape], out: Shape, attrs: Attrs) -> list[Signature]:
    ta, tb = bool(attrs.get("transpose_a")), bool(attrs.get("transpose_b"))
    am, ak = (1, 0) if ta else (0, 1)
    bk, bn = (1, 0) if tb else (0, 1)
    return [({"a": f"S{am}", "b": "B"}, "S0"), ({"a": "B", "b": f"S{bn}"}, "S1"),
            ({"a": f"S{ak}", "b": f"S{bk}"}, "P"), ({"a": "P", "b": "B"}, "P"),
            ({"a": "B", "b": "P"}, "P")]


def _bias_add(ins: Mapping[str, Shape], out: Shape, attrs: Attrs) -> list[Signature]:
    axis = int(attrs.get("axis", -1)) % len(out)
    return [({"a": f"S{i}", "b": "S0" if i == axis else "B"}, f"S{i}") for i in range(len(out))]


def _softmax(ins: Mapping[str, Shape], out: Shape, attrs: Attrs) -> list[Signature]:
    axis = int(attrs.get("axis", -1)) % len(out)
    return [({"in": f"S{i}"}, f"S{i}") for i in range(len(out)) if i != axis]


def _reduced_axes(ndim: int, attrs: Attrs) -> list[int]:
    axis = attrs.get("axis")
    if axis is None:
        return list(range(ndim))
    axes = [axis] if isinstance(axis, int) else list(axis)
    return sorted({int(a) % ndim for a in axes})


def _reduce(partial: bool) -> RuleFn:
    def rule(ins: Mapping[str, Shape], out: Shape, attrs: Attrs) -> list[Signature]:
        ndim = len(ins["in"])
        red = _reduced_axes(ndim, attrs)
        keep = bool(attrs.get("keepdims"))
        sigs = []
        for i in range(ndim):
            if i in red:
                if partial:
                    sigs.append(({"in": f"S{i}"}, "P"))
            else:
                j = i if keep else i - sum(1 for r in red if r < i)
                sigs.append(({"in": f"S{i}"}, f"S{j}"))
        if partial:
            sigs.append(({"in": "P"}, "P"))
        return sigs
    return rule


def _reshape(ins: Mapping[str, Shape], out: Shape, attrs: Attrs) -> list[Signature]:
    src = ins["in"]
    k = 0
    while k < min(len(src), len(out)) and src[k] == out[k]:
        k += 1
    return [({"in": f"S{i}"}, f"S{i}") for i in range(k)] + [({"in": "P"}, "P")]


def _reshape_attrs(attrs: Attrs, piece_shape: Shape) -> dict[str, Any]:
    return {**attrs, "shape": list(piece_shape)}


def _transpose(ins: Mapping[str, Shape], out: Shape, attrs: Attrs) -> list[Signature]:
    perm = attrs.get("perm")
    perm = list(range(len(out)))[::-1] if perm is None else [int(p) for p in perm]
    return [({"in": f"S{p}"}, f"S{j}") for j, p in enumerate(perm)] + [({"in": "P"}, "P")]


def _concat(ins: Mapping[str, Shape], out: Shape, attrs: Attrs) -> list[Signature]:
    axis = int(attrs.get("axis", 0)) % len(out)
    return [({k: f"S{i}" for k in ins}, f"S{i}") for i in range(len(out)) if i != axis]


def _slice(ins: Mapping[str, Shape], out: Shape, attrs: Attrs) -> list[Signature]:
    axis = int(attrs.get("axis", 0)) % len(out)
    return [({"in": f"S{i}"}, f"S{i}") for i in range(len(out)) if i != axis]


def _add_n(ins: Mapping[str, Shape], out: Shape, attrs: Attrs) -> list[Signature]:
    sigs = [({k: f"S{i}" for k in ins}, f"S{i}") for i in range(len(out))]
    return [*sigs, ({k: "P" for k in ins}, "P")]


unary_rule = _unary
elementwise_rule = _elementwise
reduce_rule = _reduce

register_sbp(["identity", "neg", "scalar_mul", "scalar_div"], _unary(linear=True))
register_sbp(["relu", "exp", "tanh", "cast", "scalar_add", "scalar_sub", "scalar_pow",
              "scalar_rsub", "scalar_rdiv", "scalar_rpow", "sleep", "busy"], _unary(linear=False))
register_sbp(["add", "sub"], _elementwise([{"a": "P", "b": "P"}]))
register_sbp("mul", _elementwise([{"a": "P", "b": "B"}, {"a": "B", "b": "P"}]))
register_sbp("div", _elementwise([{"a": "P", "b": "B"}]))
register_sbp(["pow", "maximum", "minimum"], _elementwise([]))
register_sbp("matmul", _matmul)
register_sbp("bias_add", _bias_add)
register_sbp("softmax", _softmax)
register_sbp("reduce_sum", _reduce(partial=True))
register_sbp("reduce_mean", _reduce(partial=False))
register_sbp("reshape", _reshape, _reshape_attrs)
register_sbp("transpose", _transpose)
register_sbp("concat", _concat)
register_sbp("slice", _slice)
register_sbp("add_n", _add_n)

__all__ = ["elementwise_rule", "physical_attrs", "reduce_rule", "register_sbp", "signatures",
           "unary_rule"]
