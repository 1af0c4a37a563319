"""``actorflow.functional`` (``F``): tensor ops, each declared once with signatures.

Every op lists its signatures in the order they are tried.  Each signature's
implementation builds its op expression once (``E(op_type, inputs)``, at import) and calls
it per call; the expression hands the call to the interpreter of the tensors
(``dispatch.py``): inside ``with af.Job`` the op is added to the job (lazy), outside it
runs eagerly on the VM.  Numpy arrays and nested lists given where a ``Tensor`` is
expected become constants (lazy) or tensors (eager) on the device of the call's tensors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from actorflow.errors import AutogradError, CompileError, DimensionError, UsageError
from actorflow.frontend import dispatch
from actorflow.frontend.dispatch import interpreter_for
from actorflow.frontend.dispatch import op_expr as E
from actorflow.frontend.fastpath import Direct, Pick
from actorflow.frontend.namespace import ALIASES, attach_method
from actorflow.frontend.placement import Placement
from actorflow.frontend.sbp import SbpParallel, as_sbp, broadcast, partial_sum
from actorflow.frontend.signature import (
    ArrayArg,
    FunctionalOp,
    _NoMatch,
    is_tensor,
    register_type,
)
from actorflow.kernels.grad import register_grad
from actorflow.registry import Registry

if TYPE_CHECKING:
    from actorflow.frontend.tensor import Tensor



def _load_op_modules() -> None:
    """Every ``frontend/functional_*.py`` declares more ops: import them all on the first
    look-up, so a new module of ops needs no list to join (``af.<op>``, ``dir``, tests)."""
    import importlib
    import pkgutil

    import actorflow.frontend as pkg

    for m in pkgutil.iter_modules(pkg.__path__):
        if m.name.startswith("functional_"):
            importlib.import_module(f"actorflow.frontend.{m.name}")


# every op declared with ``define``, by name: ``af.<name>`` and tensor methods come from here
OPS: Registry[FunctionalOp] = Registry("functional op", loader=_load_op_modules)


def _placement_arg(v: Any) -> Placement:
    if isinstance(v, Placement):
        return v
    raise _NoMatch


def _sbp_arg(v: Any) -> SbpParallel:
    try:
        return as_sbp(v)
    except TypeError:
        raise _NoMatch from None


register_type("Placement", _placement_arg)
register_type("Sbp", _sbp_arg)


def _finalize(bound: dict) -> dict:
    """Turn numpy arguments into tensors of the interpreter of the call's tensors."""
    if not any(isinstance(v, (ArrayArg, list)) for v in bound.values()):
        return bound
    tensors = [v for v in bound.values() if is_tensor(v)]
    tensors += [x for v in bound.values() if isinstance(v, list) for x in v if is_tensor(x)]
    interp = interpreter_for(tensors)
    return {k: _fix(v, interp, tensors) for k, v in bound.items()}


def _fix(v: Any, interp: Any, tensors: list[Any]) -> Any:
    """A module-level function, not a recursive closure: a closure calling itself is a
    reference cycle that would keep the call's tensors alive until the next collection."""
    if isinstance(v, ArrayArg):
        return interp.constant_like(v.value, tensors)
    if isinstance(v, list):
        return [_fix(x, interp, tensors) for x in v]
    return v


def define(name: str, overloads: list[tuple[str, Callable[..., Any]]], doc: str = "",
           method: bool | None = None) -> Any:
    """Declare the functional op ``name``: registered (so it is ``af.<name>``), and a tensor
    method where OneFlow's Tensor has one of that name (``method`` overrides: True makes
    one, False none; ``frontend/namespace.py``)."""
    op = FunctionalOp(name, overloads, _finalize, doc)
    OPS.register(name, op)
    attach_method(name, op, method)
    return op


def lookup(name: str) -> FunctionalOp | None:
    """The functional op called ``name`` (or one of OneFlow's aliases of it), else None."""
    name = ALIASES.get(name, name)
    return OPS.get(name) if name in OPS else None


def _no_inplace(name: str, inplace: bool) -> None:
    if inplace:
        raise UsageError(f"{name}(): inplace=True is not supported: tensors are immutable")


# -- element-wise binary ops ------------------------------------------------------------------
def _binary(name: str, reverse_op: str | None, doc: str) -> FunctionalOp:
    e_tt, e_ts = E(name, ("a", "b")), E(f"scalar_{name}", ("in",))
    e_st = E(reverse_op or f"scalar_{name}", ("in",))

    tt = Direct(e_tt, {"a": "input", "b": "other"})
    ts = Direct(e_ts, {"in": "input"}, {"scalar": "other"}, scalars=("scalar",))
    st = Direct(e_st, {"in": "other"}, {"scalar": "input"}, scalars=("scalar",))
    return define(name, [("Tensor (Tensor input, Tensor other)", tt),
                         ("Tensor (Tensor input, Scalar other)", ts),
                         ("Tensor (Scalar input, Tensor other)", st)], doc)


add = _binary("add", None, "input + other")
sub = _binary("sub", "scalar_rsub", "input - other")
mul = _binary("mul", None, "input * other")
div = _binary("div", "scalar_rdiv", "input / other")


_E_POW, _E_SPOW, _E_RPOW = E("pow", ("a", "b")), E("scalar_pow", ("in",)), E("scalar_rpow",
                                                                               ("in",))


_pow_tt = Direct(_E_POW, {"a": "input", "b": "exponent"})
_pow_ts_inplace = Direct(_E_SPOW, {"in": "input"}, {"scalar": "exponent"}, scalars=("scalar",),
                         require={"inplace": (False, lambda v: _no_inplace("pow", v))})
_pow_ts = Direct(_E_SPOW, {"in": "input"}, {"scalar": "exponent"}, scalars=("scalar",))
_pow_st = Direct(_E_RPOW, {"in": "exponent"}, {"scalar": "base"}, scalars=("scalar",))


pow = define("pow", [
    ("Tensor (Tensor input, Tensor exponent)", _pow_tt),
    ("Tensor (Tensor input, Scalar exponent, *, Bool inplace=False)", _pow_ts_inplace),
    ("Tensor (Tensor input, Scalar exponent)", _pow_ts),
    ("Tensor (Scalar base, Tensor exponent)", _pow_st),
], "input ** exponent")

def _tt(op_type: str) -> Callable[..., Tensor]:
    return Direct(E(op_type, ("a", "b")), {"a": "input", "b": "other"})


def _unary(op_type: str) -> Callable[..., Tensor]:
    return Direct(E(op_type, ("in",)), {"in": "x"})


maximum = define("maximum", [("Tensor (Tensor input, Tensor other)", _tt("maximum"))])
minimum = define("minimum", [("Tensor (Tensor input, Tensor other)", _tt("minimum"))])


# -- unary ops --------------------------------------------------------------------------------
_E_RELU = E("relu", ("in",))


_relu = Direct(_E_RELU, {"in": "x"}, require={"inplace": (False, lambda v: _no_inplace("relu",
                                                                                           v))})


relu = define("relu", [("Tensor (Tensor x, Bool inplace=False)", _relu)], "max(x, 0)")
neg = define("neg", [("Tensor (Tensor x)", _unary("neg"))], "-x")
exp = define("exp", [("Tensor (Tensor x)", _unary("exp"))], "e ** x")
tanh = define("tanh", [("Tensor (Tensor x)", _unary("tanh"))], "tanh(x)")
identity = define("identity", [("Tensor (Tensor x)", _unary("identity"))])
_E_CAST = E("cast", ("in",))
cast = define("cast", [("Tensor (Tensor x, DataType dtype)",
                        Direct(_E_CAST, {"in": "x"}, {"dtype": "dtype"}))])


# -- linear algebra, reductions, layout ------------------------------------------------------
_E_MATMUL = E("matmul", ("a", "b"))


_E_BMM = E("batch_matmul", ("a", "b"))
_matmul_2d = Direct(_E_MATMUL, {"a": "a", "b": "b"},
                    {"transpose_a": "transpose_a", "transpose_b": "transpose_b"})
_matmul_nd = Direct(_E_BMM, {"a": "a", "b": "b"},
                    {"transpose_a": "transpose_a", "transpose_b": "transpose_b"})


# 2-D: ``matmul``; a rank > 2 operand: ``batch_matmul`` (batch axes broadcast)
_matmul = Pick(lambda kw: _matmul_nd if kw["a"].ndim > 2 or kw["b"].ndim > 2 else _matmul_2d)


matmul = define("matmul", [
    ("Tensor (Tensor a, Tensor b, *, Bool transpose_a=False, Bool transpose_b=False)", _matmul)],
    "matrix product; inputs of rank > 2 multiply their last two axes, batch axes broadcast")
_E_BIAS, _E_SOFTMAX = E("bias_add", ("a", "b")), E("softmax", ("in",))
bias_add = define("bias_add", [("Tensor (Tensor x, Tensor bias, Int axis=-1)",
                                Direct(_E_BIAS, {"a": "x", "b": "bias"}, {"axis": "axis"}))])
softmax = define("softmax", [("Tensor (Tensor x, Int dim=-1)",
                              Direct(_E_SOFTMAX, {"in": "x"}, {"axis": "dim"}))])


def _reduce(op_type: str) -> Callable[..., Tensor]:
    e = E(op_type, ("in",))

    def fn(x: Tensor, dim: tuple[int, ...] | None = None, keepdim: bool = False) -> Tensor:
        return e({"in": x}, {"axis": None if dim is None else list(dim), "keepdims": keepdim})
    return fn


sum = define("sum", [("Tensor (Tensor x, IntList? dim=None, Bool keepdim=False)",
                      _reduce("reduce_sum"))])
mean = define("mean", [("Tensor (Tensor x, IntList? dim=None, Bool keepdim=False)",
                        _reduce("reduce_mean"))])
_E_RESHAPE, _E_TRANSPOSE = E("reshape", ("in",)), E("transpose", ("in",))
reshape = define("reshape", [("Tensor (Tensor x, IntList shape)",
                              lambda x, shape: _E_RESHAPE({"in": x}, {"shape": list(shape)}))])


def _swap(x: Tensor, dim0: int, dim1: int) -> Tensor:
    perm = list(range(x.ndim))
    try:
        perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
    except IndexError:
        n = max(x.ndim, 1)
        raise DimensionError(f"transpose(): dims ({dim0}, {dim1}) are out of range for a "
                             f"tensor of rank {x.ndim} {x.shape}: Dimension out of range "
                             f"(expected to be in range of [{-n}, {n - 1}], but got "
                             f"{dim0 if not -n <= dim0 < n else dim1})") from None
    return _E_TRANSPOSE({"in": x}, {"perm": perm})


transpose = define("transpose", [
    ("Tensor (Tensor x, Int dim0, Int dim1)", _swap),
    ("Tensor (Tensor x, IntList? perm=None)",
     lambda x, perm: _E_TRANSPOSE({"in": x}, {"perm": None if perm is None else list(perm)})),
])


def _permute(x: Tensor, dims: tuple[int, ...]) -> Tensor:
    n = x.ndim
    if len(dims) != n:
        raise CompileError(f"permute(): number of dims don't match in permute: {len(dims)} dims "
                           f"{list(dims)} for a tensor of rank {n} {tuple(x.shape)}")
    for d in dims:
        if not -max(n, 1) <= d < max(n, 1):
            raise DimensionError(f"permute(): Dimension out of range (expected to be in range "
                                 f"of [{-max(n, 1)}, {max(n, 1) - 1}], but got {d})")
    return _E_TRANSPOSE({"in": x}, {"perm": [d % max(n, 1) for d in dims]})


permute = define("permute", [("Tensor (Tensor x, IntList dims)", _permute)],
                 "the axes of input in the order dims")


def _concat(tensors: list[Tensor], dim: int = 0) -> Tensor:
    names = tuple(f"in_{i}" for i in range(len(tensors)))
    return E("concat", names)(dict(zip(names, tensors)), {"axis": dim})


concat = define("concat", [("Tensor (TensorList tensors, Int dim=0)", _concat)])


_E_TO_GLOBAL = E("to_global", ("in",))


def _to_global(x: Tensor, placement: Placement | None = None,
               sbp: SbpParallel | None = None) -> Tensor:
    out = interpreter_for((x,)).to_global(x, placement, sbp)
    hook = dispatch.ISSUE_HOOK  # not an OpExpr call: tell autograd here
    if hook is not None and out is not x:
        hook(_E_TO_GLOBAL, {"in": x}, {"placement": placement, "sbp": sbp}, out)
    return out


def _to_global_grad(F: Any, ctx: Any, dy: Any) -> dict[str, Any]:
    """Back to the input's placement; the SBP is the forward's dual (a broadcast input's
    gradient is partial-sum, a partial-sum input's broadcast, a split stays split)."""
    x = ctx.inputs["in"]
    if x.interpreter == "eager.local":
        raise AutogradError("to_global() of a local tensor has no gradient rule; make the "
                            "tensor that requires grad global instead")
    code = getattr(x.sbp, "code", None)
    if x.interpreter == "lazy":  # the compiler keeps dy's layout unless x fixed a split
        sbp = x.sbp if code is not None and code.startswith("S") else None
    else:
        sbp = {"B": partial_sum, "P": broadcast}.get(code or "", x.sbp)
    return {"in": F.to_global(dy, x.placement, sbp)}


register_grad("to_global", _to_global_grad)


to_global = define("to_global", [
    ("Tensor (Tensor x, Placement? placement=None, Sbp? sbp=None)", _to_global)],
    "the same values on another placement and/or SBP (the compiler inserts boxing)")

def _assign(ref: Tensor, value: Tensor) -> Tensor:
    from actorflow.frontend.job import assign_variable

    return assign_variable(ref, value)


def _assign_scalar(ref: Tensor, value: float) -> Tensor:
    return _assign(ref, ref * 0.0 + value)


assign = define("assign", [("Tensor (Tensor ref, Tensor value)", _assign),
                           ("Tensor (Tensor ref, Scalar value)", _assign_scalar)],
                "write value into variable ref (applied in piece order); returns the new "
                "value")

__all__ = [
    "add",
    "assign",
    "bias_add",
    "cast",
    "concat",
    "div",
    "exp",
    "identity",
    "matmul",
    "maximum",
    "mean",
    "minimum",
    "mul",
    "neg",
    "permute",
    "pow",
    "relu",
    "reshape",
    "softmax",
    "sub",
    "sum",
    "tanh",
    "to_global",
    "transpose",
]


def __getattr__(name: str) -> FunctionalOp:
    """Ops declared in the other ``functional_*.py`` modules are attributes here too
    (``F.sigmoid``), found in the registry."""
    op = lookup(name) if not name.startswith("_") else None
    if op is None:
        raise AttributeError(f"module 'actorflow.functional' has no attribute {name!r}")
    return op
