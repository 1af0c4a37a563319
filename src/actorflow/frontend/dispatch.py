"""One definition, several interpreters: op expressions and the interpreter choice.

A functional op's signature implementation builds its ``OpExpr`` once (op type and input
names; the op definition is looked up once) and calls it with tensors and attrs per
call.  The expression hands the call to the interpreter of its input tensors (seed 002's
``OpInterpUtil::Dispatch``):

* ``lazy``        tensors of a job being traced: adds an op to the job (compiled later);
* ``eager.local`` eager tensors: instructions on this process's VM, run asynchronously;
* a third kind of tensor (eager global tensors) names its own interpreter, registered here.

Each tensor class names its interpreter (``interpreter = "lazy"``); an op with no tensor
inputs uses ``lazy`` inside ``with af.Job`` and ``eager.local`` outside.  Mixing kinds in
one op is an error that names both.
"""

from __future__ import annotations

from typing import Any

from actorflow.errors import UsageError
from actorflow.kernels.registry import OpDef, get_op
from actorflow.registry import Registry

INTERPRETERS: Registry[Any] = Registry("interpreter")
_BY_NAME: dict[str, Any] = {}
ISSUE_HOOK: Any = None  # autograd's tape hook: fn(expr, inputs, attrs, outputs), or None


def set_issue_hook(fn: Any) -> None:
    """Call ``fn(expr, inputs: dict, attrs: dict, outputs)`` right after every op is issued
    (any interpreter, the fast path too); None turns it off (then it costs one test)."""
    global ISSUE_HOOK
    from actorflow.eager.core import set_issue_hook as eager_hook

    ISSUE_HOOK = fn
    eager_hook(fn)


def register_interpreter(name: str, interpreter: Any) -> Any:
    INTERPRETERS.register(name, interpreter)
    _BY_NAME[name] = interpreter
    return interpreter


def _default_name() -> str:
    from actorflow.frontend.job import _STACK

    return "lazy" if _STACK else "eager.local"


def interpreter_for(tensors: Any) -> Any:
    """The interpreter of these tensors (an iterable), or of the current mode if none."""
    name = None
    for t in tensors:
        n = t.interpreter
        if name is None:
            name = n
        elif n != name:
            raise UsageError(f"an op mixes {name} and {n} tensors; a job traces lazy tensors "
                             "only (read an eager tensor's values with .numpy() and pass the "
                             "array instead)")
    if name is None:
        name = _default_name()
    interp = _BY_NAME.get(name)
    return interp if interp is not None else INTERPRETERS.get(name)


class OpExpr:
    """An op type with named inputs, built once per functional signature."""

    __slots__ = ("_opdef", "input_names", "op_type")

    def __init__(self, op_type: str, input_names: tuple[str, ...] = ()) -> None:
        self.op_type = op_type
        self.input_names = input_names
        self._opdef: OpDef | None = None

    @property
    def opdef(self) -> OpDef:
        d = self._opdef
        if d is None:
            d = self._opdef = get_op(self.op_type)
        return d

    def __call__(self, inputs: dict[str, Any], attrs: dict[str, Any] | None = None) -> Any:
        attrs = attrs or {}
        out = interpreter_for(inputs.values()).apply(self, inputs, attrs)
        if ISSUE_HOOK is not None:
            ISSUE_HOOK(self, inputs, attrs, out)
        return out

    def __repr__(self) -> str:
        return f"OpExpr({self.op_type!r}, {self.input_names})"


_EXPRS: dict[tuple[str, tuple[str, ...]], OpExpr] = {}


def op_expr(op_type: str, input_names: tuple[str, ...]) -> OpExpr:
    """The one OpExpr of (op type, input names): built on first use, then cached."""
    key = (op_type, input_names)
    e = _EXPRS.get(key)
    if e is None:
        e = _EXPRS[key] = OpExpr(op_type, input_names)
    return e


class LazyInterpreter:
    """Adds the op to the job its input tensors belong to (exactly the job tracing)."""

    name = "lazy"

    def apply(self, expr: OpExpr, inputs: dict[str, Any], attrs: dict[str, Any]) -> Any:
        first = next(iter(inputs.values()))
        return first.job.add(expr.op_type, inputs, attrs)

    def constant_like(self, value: Any, like: list[Any]) -> Any:
        from actorflow.frontend.job import current_job

        j = like[0].job if like else current_job()
        return j.constant(value, like[0].placement if like else None)

    def to_global(self, x: Any, placement: Any = None, sbp: Any = None) -> Any:
        from actorflow.frontend.job import _check_axis

        if sbp is not None:
            _check_axis(x.name, sbp, x.ndim)
            if sbp.code == "P":
                raise UsageError(f"to_global(): '{x.name}' cannot be boxed into partial_sum; "
                                 "only ops produce partial sums (e.g. matmul of split inner "
                                 "axes)")
        return x.job.add("to_global", {"in": x}, place=placement, sbp=sbp)


register_interpreter("lazy", LazyInterpreter())
