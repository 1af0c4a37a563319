"""Parameters: leaf tensors a module owns, that become variables when a job traces them.

``nn.Parameter(t)`` is an eager tensor (a copy of ``t``) that requires grad and carries a
``ParamInfo`` in its autograd state: the initializer it was drawn with (so a job's variable
draws the very same values in its kernel: ``kernels/ops/generators.initial_variable_value``
makes both), the variable name it gets in jobs, and the placement and SBP it is annotated
with (``Module.to_global``).  Inside ``with af.Job`` a module reading its parameter gets the
job's variable instead (``variable_for``): one variable per parameter per job, named the
same in every job, so a train job and an eval job share it under the main job.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from actorflow.errors import UsageError
from actorflow.frontend import functional as F
from actorflow.frontend.autograd.mode import no_grad
from actorflow.frontend.autograd.tape import AutogradMeta, meta_of, set_meta, start_recording
from actorflow.frontend.creation import tensor as make_tensor
from actorflow.frontend.job import Job
from actorflow.kernels.ops.generators import initial_variable_value


class ParamInfo:
    """What a job needs to make a parameter's variable."""

    __slots__ = ("init", "name", "owner", "placement", "sbp")

    def __init__(self, init: dict[str, Any] | None) -> None:
        self.init = init  # variable init attrs, or None once the values changed
        self.name: str | None = None  # set by the user, or its path from the root module
        self.owner: Any = None  # (module, attribute) that holds it
        self.placement: Any = None
        self.sbp: Any = None

    def changed(self) -> None:
        self.init = None


class _ParameterType(type):
    def __instancecheck__(cls, obj: Any) -> bool:
        m = meta_of(obj)
        return m is not None and m.param is not None

    def __call__(cls, data: Any = None, requires_grad: bool = True) -> Any:
        if data is None:
            data = make_tensor(np.zeros(0, np.float32))
        return make_parameter(data, requires_grad)


class Parameter(metaclass=_ParameterType):
    """``nn.Parameter(tensor, requires_grad=True)``: a module's leaf tensor (a copy)."""


def make_parameter(data: Any, requires_grad: bool = True,
                   init: dict[str, Any] | None = None) -> Any:
    with no_grad():
        t = F.identity(data)
    meta = AutogradMeta(bool(requires_grad))
    meta.param = ParamInfo(init)
    set_meta(t, meta)
    if requires_grad:
        start_recording()
    return t


def init_parameter(shape: tuple[int, ...], init: dict[str, Any], dtype: str = "float32",
                   device: Any = "cpu") -> Any:
    """A parameter drawn by ``init`` (variable init attrs), made the way a job's variable
    kernel makes it, so eager and graph runs start from the same numbers."""
    attrs = {**init, "shape": list(shape), "dtype": dtype}
    value = initial_variable_value(attrs)
    return make_parameter(make_tensor(value, device=device), True, dict(init))


def info_of(p: Any) -> ParamInfo:
    m = meta_of(p)
    if m is None or m.param is None:
        raise UsageError(f"{type(p).__name__} of shape {getattr(p, 'shape', '?')} is not a "
                         "parameter (nn.Parameter) of a module")
    info: ParamInfo = m.param
    return info


def variable_for(job: Job, p: Any) -> Any:
    """The variable of parameter ``p`` in ``job`` (made on first use, then the same)."""
    table: dict[int, tuple[Any, Any]] = job.__dict__.setdefault("_param_vars", {})
    hit = table.get(id(p))
    if hit is not None:
        return hit[1]
    info = info_of(p)
    if info.name is None:
        info.name = _path(info)
    if info.init is not None:
        attrs = dict(info.init)
    else:  # changed in eager mode since it was drawn: the job starts from its values
        value = np.asarray(p.numpy())
        attrs = {"init": "value", "value": value.ravel().tolist()}
    var = job.variable(info.name, tuple(p.shape), str(p.dtype), placement=info.placement,
                       sbp=info.sbp, requires_grad=p.requires_grad, **attrs)
    m = meta_of(var)
    if m is not None:
        m.param = info
    table[id(p)] = (p, var)  # keeps p alive while the job is, so its id stays unique
    return var


def _path(info: ParamInfo) -> str:
    """``"0.fc1.weight"``: the attribute path from the outermost module holding it."""
    if info.owner is None:
        raise UsageError("a parameter read in a job must belong to a module (or be named: "
                         "give it one with nn.Parameter's info) to become a variable")
    module, attr = info.owner
    parts = [attr]
    seen = set()
    while True:
        parent = module.__dict__.get("_parent")
        if parent is None or id(module) in seen:
            break
        seen.add(id(module))
        module, name = parent
        parts.append(name)
    return ".".join(reversed(parts))


def variables_of(job: Job) -> dict[int, Any]:
    """id(parameter) -> its variable in ``job``, for the parameters the job read."""
    table: dict[int, tuple[Any, Any]] = job.__dict__.get("_param_vars", {})
    return {k: v for k, (_, v) in table.items()}


__all__ = ["ParamInfo", "Parameter", "info_of", "init_parameter", "make_parameter",
           "variable_for", "variables_of"]
