"""``Optimizer``: parameter groups, state, ``zero_grad`` and ``step`` in both modes.

One update rule per optimizer (``_update``), written with tensor operators, serves both
modes.  Eagerly, ``step()`` issues the update's ops on the VM and swaps each parameter's
new value in (the parameter object stays the same); the state (momentum buffers, Adam's
moments) is eager tensors in ``self.state``.  Inside ``with af.Job``, ``step()`` makes the
job assign every parameter's variable its new value, and the state is variables named
``<parameter>.<state>`` (``0.weight.exp_avg``) with the parameter's placement and SBP:
``Session.save`` checkpoints them and ``Session.load`` re-shards them like any variable.
The step counter and a scheduled learning rate are variables and ops of the job too.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any

from actorflow.errors import ArgumentTypeError, UsageError
from actorflow.frontend import functional_nn as F
from actorflow.frontend.autograd.mode import no_grad
from actorflow.frontend.autograd.tape import meta_of
from actorflow.frontend.job import Job, tracing
from actorflow.nn.parameter import variables_of


def _describe(p: Any) -> str:
    name = getattr(p, "name", None)
    return f"'{name}'" if isinstance(name, str) else f"{type(p).__name__} {getattr(p, 'shape', '')}"


def check_param(p: Any, where: str) -> None:
    """A parameter an optimizer may update: a leaf tensor that requires grad (a module's
    parameter, or a job's variable made with requires_grad=True)."""
    if not (hasattr(p, "shape") and hasattr(p, "interpreter")):
        raise ArgumentTypeError(f"optimizer can only optimize tensors (parameters or "
                                f"variables), but {where} is a {type(p).__name__}")
    m = meta_of(p)
    if m is None or not m.requires_grad or m.grad_fn is not None:
        raise ArgumentTypeError(f"optimizer can only optimize leaf tensors that require grad "
                                f"(nn.Parameter, af.variable(..., requires_grad=True)), but "
                                f"{where} ({_describe(p)}) is not one")
    if p.interpreter == "lazy":
        op = p.job._ops.get(p.name)
        if op is None or op.op_type != "variable_part":
            raise ArgumentTypeError(f"optimizer can only optimize variables in a job, but "
                                    f"{where} ('{p.name}') is the output of a "
                                    f"{getattr(op, 'op_type', '?')} op")


class _EagerState:
    def __init__(self, table: dict[str, Any]) -> None:
        self.table = table

    def get(self, key: str, like: Any) -> Any:
        v = self.table.get(key)
        return F.fill_like(like, 0.0) if v is None else v

    def set(self, key: str, value: Any) -> None:
        self.table[key] = value


class _JobState:
    """State of one parameter in a job: variables ``<var>.<key>`` assigned each step."""

    def __init__(self, job: Job, var: Any) -> None:
        self.job, self.var = job, var
        self.vars: dict[str, Any] = {}

    def variable(self, key: str, shape: tuple[int, ...], dtype: str) -> Any:
        v = self.vars.get(key)
        if v is None:
            v = self.vars[key] = self.job.variable(
                f"{self.var.name}.{key}", shape, dtype, placement=self.var.placement,
                sbp=self.var.sbp if len(shape) == len(self.var.shape) else None,
                init="zeros")
        return v

    def get(self, key: str, like: Any) -> Any:
        return self.variable(key, tuple(like.shape), str(like.dtype))

    def set(self, key: str, value: Any) -> None:
        F.assign(self.vars[key], value)


class Optimizer:
    """Base: ``param_groups`` (dicts with ``params`` and hyper-parameters), ``state``."""

    def __init__(self, params: Iterable[Any] | Any, defaults: dict[str, Any]) -> None:
        self.defaults = dict(defaults)
        self.param_groups: list[dict[str, Any]] = []
        self.state: dict[Any, dict[str, Any]] = {}
        self._lr_specs: list[dict[str, Any]] | None = None  # set by an lr_scheduler
        if hasattr(params, "shape"):
            raise ArgumentTypeError(f"params argument given to the optimizer should be an "
                                    f"iterable of tensors or dicts, but got a "
                                    f"{type(params).__name__}")
        groups = list(params)
        if not groups:
            raise UsageError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, group: dict[str, Any]) -> None:
        params = group["params"]
        params = [params] if hasattr(params, "shape") else list(params)
        for i, p in enumerate(params):
            check_param(p, f"params[{i}] of group {len(self.param_groups)}")
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in params):
            raise UsageError("some parameters appear in more than one parameter group")
        full = {**self.defaults, **group, "params": params}
        for k, v in self.defaults.items():
            if v is _REQUIRED and k not in group:
                raise UsageError(f"parameter group didn't specify a value of required "
                                 f"optimization parameter {k}")
        self.param_groups.append(full)

    def clip_grad(self, error_if_nonfinite: bool = False) -> None:
        """OneFlow's: clip each group's gradients by ``clip_grad_norm_`` with the group's
        ``clip_grad_max_norm`` and ``clip_grad_norm_type`` (eagerly or in a job); a group
        without them is left alone, with OneFlow's warning."""
        from actorflow.nn.utils import clip_grad_norm_

        for g in self.param_groups:
            if "clip_grad_max_norm" in g and "clip_grad_norm_type" in g:
                clip_grad_norm_(g["params"], g["clip_grad_max_norm"], g["clip_grad_norm_type"],
                                error_if_nonfinite)
            else:
                warnings.warn("To enable clip_grad, pass the `clip_grad_max_norm` and "
                              "`clip_grad_norm_type` parameters when making the Optimizer",
                              stacklevel=2)

    def zero_grad(self, set_to_none: bool = False) -> None:
        """Zero the gradients, or forget them with ``set_to_none=True`` (OneFlow's default
        keeps zero tensors); eager mode only: a job's gradients exist per piece."""
        if tracing() is not None:
            return
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is not None:
                    if set_to_none:
                        p.grad = None
                    else:
                        with no_grad():
                            p.grad.zero_()

    # -- step ----------------------------------------------------------------------------------
    def step(self, closure: Any = None) -> Any:
        loss = None
        if closure is not None:
            from actorflow.frontend.autograd.mode import enable_grad

            with enable_grad():
                loss = closure()
        job = tracing()
        if job is not None:
            self._step_in_job(job)
        else:
            self._step_eager()
        return loss

    def _step_eager(self) -> None:
        with no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    g = p.grad
                    if g is None:
                        continue
                    table = self.state.setdefault(p, {})
                    step = int(table.get("step", 0)) + 1
                    table["step"] = step
                    new = self._update(p, g, _EagerState(table), group, group["lr"], step)
                    if new.dtype != p.dtype:
                        new = F.cast(new, p.dtype)
                    p._swap_data(new)  # new is fresh: p takes its value, new the old one
                    m = meta_of(p)
                    if m is not None and m.param is not None:
                        m.param.changed()

    def _step_in_job(self, job: Job) -> None:
        variables = variables_of(job)
        with no_grad():
            for gi, group in enumerate(self.param_groups):
                for p in group["params"]:
                    var = p if p.interpreter == "lazy" else variables.get(id(p))
                    if var is None or var.job is not job:
                        continue  # this job never read the parameter
                    g = var.grad
                    if g is None:
                        continue
                    st = _JobState(job, var)
                    count = st.variable("step", (1,), "float32")
                    step = count + 1.0
                    st.set("step", step)
                    lr: Any = group["lr"]
                    if self._lr_specs is not None:
                        lr = F.learning_rate(count, self._lr_specs[gi])
                    new = self._update(var, g, st, group, lr, step)
                    if new.dtype != var.dtype:
                        new = F.cast(new, var.dtype)
                    F.assign(var, new)

    def _update(self, p: Any, g: Any, st: Any, group: dict[str, Any], lr: Any,
                step: Any) -> Any:
        """The parameter's new value (tensor ops; ``lr``/``step`` numbers or tensors)."""
        raise NotImplementedError

    # -- state dicts -----------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """PyTorch's layout: ``state`` by parameter index, ``param_groups`` with indices."""
        index = {id(p): i for i, p in enumerate(p for g in self.param_groups for p in g["params"])}
        groups = []
        for g in self.param_groups:
            d = {k: v for k, v in g.items() if k != "params"}
            d["params"] = [index[id(p)] for p in g["params"]]
            groups.append(d)
        state = {index[id(p)]: dict(s) for p, s in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        groups = state_dict.get("param_groups")
        if groups is None or "state" not in state_dict:
            raise UsageError("load_state_dict(): an optimizer state dict has 'state' and "
                             f"'param_groups', this one has {sorted(state_dict)}")
        if len(groups) != len(self.param_groups) or any(
                len(a["params"]) != len(b["params"]) for a, b in zip(groups, self.param_groups)):
            raise UsageError("load_state_dict(): the state dict's parameter groups do not match "
                             "this optimizer's (number of groups or of parameters)")
        params = [p for g in self.param_groups for p in g["params"]]
        for g, saved in zip(self.param_groups, groups):
            g.update({k: v for k, v in saved.items() if k != "params"})
        self.state = {}
        for i, s in state_dict["state"].items():
            self.state[params[int(i)]] = dict(s)

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {v}" for k, v in sorted(g.items()) if k != "params"]
        return "\n".join([*lines, ")"])


class _Required:
    def __repr__(self) -> str:
        return "<required parameter>"


_REQUIRED: Any = _Required()

__all__ = ["Optimizer", "check_param"]
