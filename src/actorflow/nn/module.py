"""``nn.Module``: parameters, buffers and submodules by attribute, as in PyTorch/OneFlow.

Outside a job a module's parameters are eager tensors; inside ``with af.Job`` reading one
gives the job's variable of it (``parameter.variable_for``), so the same ``forward`` traces
the model into the job; the variable names are shared by every job of a plan and by
checkpoints.  A parameter's name is its attribute path from the outermost module
holding it (``"0.weight"``, ``"fc1.bias"``), as ``named_parameters()`` of that module says.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from actorflow.errors import UsageError
from actorflow.frontend import functional as F
from actorflow.frontend.autograd.mode import no_grad
from actorflow.frontend.creation import tensor as make_tensor
from actorflow.frontend.job import tracing as _tracing
from actorflow.nn.parameter import Parameter, info_of, make_parameter, variable_for


class Module:
    """Base of every layer: holds parameters, buffers and submodules; ``forward`` computes."""

    def __init__(self) -> None:
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "training", True)

    # -- attributes ------------------------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        if "_parameters" not in self.__dict__:
            raise UsageError(f"{type(self).__name__}: call super().__init__() before setting "
                             f"attribute '{name}'")
        for table in (self._parameters, self._buffers, self._modules):
            table.pop(name, None)
        if isinstance(value, Parameter):
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            self.add_module(name, value)
        else:
            object.__setattr__(self, name, value)
            return
        self.__dict__.pop(name, None)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        if name in d.get("_parameters", ()):
            p = d["_parameters"][name]
            job = _tracing()
            return p if job is None or p is None else variable_for(job, p)
        if name in d.get("_buffers", ()):
            b = d["_buffers"][name]
            job = _tracing()
            return b if job is None or b is None else _buffer_in(job, b)
        if name in d.get("_modules", ()):
            return d["_modules"][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for table in (self._parameters, self._buffers, self._modules):
            if name in table:
                del table[name]
                return
        object.__delattr__(self, name)

    def register_parameter(self, name: str, param: Any) -> None:
        if param is not None and not isinstance(param, Parameter):
            raise UsageError(f"register_parameter('{name}'): expected an nn.Parameter, not "
                             f"{type(param).__name__}")
        if param is not None and info_of(param).owner is None:
            info_of(param).owner = (self, name)
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Any, persistent: bool = True) -> None:
        """A tensor the module keeps that is not trained (a causal mask, running stats)."""
        self._buffers[name] = tensor

    def add_module(self, name: str, module: Module | None) -> None:
        if module is not None and "_parent" not in module.__dict__:
            object.__setattr__(module, "_parent", (self, name))  # names its variables
        self._modules[name] = module

    # -- running ---------------------------------------------------------------------------
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no forward()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    # -- walking -----------------------------------------------------------------------------
    def named_modules(self, prefix: str = "", memo: set[int] | None = None
                      ) -> Iterator[tuple[str, Module]]:
        memo = set() if memo is None else memo
        if id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                yield from m.named_modules(f"{prefix}.{name}" if prefix else name, memo)

    def modules(self) -> Iterator[Module]:
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, Module]]:
        for name, m in self._modules.items():
            if m is not None:
                yield name, m

    def children(self) -> Iterator[Module]:
        for _, m in self.named_children():
            yield m

    def named_parameters(self, prefix: str = "", recurse: bool = True
                         ) -> Iterator[tuple[str, Any]]:
        seen: set[int] = set()
        mods = self.named_modules(prefix) if recurse else iter([(prefix, self)])
        for mp, m in mods:
            for name, p in m._parameters.items():
                if p is not None and id(p) not in seen:
                    seen.add(id(p))
                    yield (f"{mp}.{name}" if mp else name), p

    def parameters(self, recurse: bool = True) -> Iterator[Any]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "") -> Iterator[tuple[str, Any]]:
        for mp, m in self.named_modules(prefix):
            for name, b in m._buffers.items():
                if b is not None:
                    yield (f"{mp}.{name}" if mp else name), b

    def buffers(self) -> Iterator[Any]:
        for _, b in self.named_buffers():
            yield b

    # -- modes and state -------------------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        for m in self.modules():
            object.__setattr__(m, "training", bool(mode))
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = False) -> None:
        """Zero the parameters' gradients (``set_to_none=True``: forget them); OneFlow's
        default keeps zero tensors."""
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    with no_grad():
                        p.grad.zero_()

    def state_dict(self) -> OrderedDict[str, Any]:
        """Name -> a detached copy of every parameter and buffer (names as variables), in
        OneFlow's order: each module's parameters, then its buffers, then its children's."""
        out: OrderedDict[str, Any] = OrderedDict()
        for mp, m in self.named_modules():
            for name, p in m._parameters.items():
                if p is not None:
                    out[f"{mp}.{name}" if mp else name] = p.detach()
            for name, b in m._buffers.items():
                if b is not None:
                    out[f"{mp}.{name}" if mp else name] = b
        return out

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True) -> Any:
        """Set parameters (and buffers) from ``state_dict`` (tensors or arrays, by name);
        ``strict``: missing or unexpected names are an error listing them."""
        params = dict(self.named_parameters())
        buffers = dict(self.named_buffers())
        missing = sorted((set(params) | set(buffers)) - set(state_dict))
        unexpected = sorted(set(state_dict) - set(params) - set(buffers))
        if strict and (missing or unexpected):
            raise UsageError(f"load_state_dict() for {type(self).__name__}: missing keys "
                             f"{missing}, unexpected keys {unexpected}")
        for name, value in state_dict.items():
            if name in params:
                p = params[name]
                v = _as_tensor(value, p)
                if tuple(v.shape) != tuple(p.shape):
                    raise UsageError(f"load_state_dict(): '{name}' has shape "
                                     f"{tuple(v.shape)} in the state dict, the module's "
                                     f"{tuple(p.shape)}")
                with no_grad():
                    p.copy_(v)
            elif name in buffers:
                self._set_buffer(name, _as_tensor(value, buffers[name]))
        return missing, unexpected

    def _set_buffer(self, path: str, value: Any) -> None:
        *mods, name = path.split(".")
        m: Module = self
        for part in mods:
            m = m._modules[part]
        m._buffers[name] = value

    def apply(self, fn: Any) -> Module:
        """``fn(module)`` on every submodule, children first, then on this one (OneFlow's)."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def float(self) -> Module:
        """Floating-point parameters and buffers cast to float32 (parameters keep identity)."""
        return self._cast_floats("float32")

    def double(self) -> Module:
        """Floating-point parameters and buffers cast to float64 (parameters keep identity)."""
        return self._cast_floats("float64")

    def _cast_floats(self, dtype: str) -> Module:
        for p in self.parameters():
            if p.dtype.is_floating_point and str(p.dtype) != dtype:
                with no_grad():
                    p._swap_data(F.cast(p, dtype))
                    if p.grad is not None:
                        p.grad = F.cast(p.grad, dtype)
                info_of(p).changed()  # a job's variable starts from these values
        for m in self.modules():
            for name, b in list(m._buffers.items()):
                if b is not None and b.dtype.is_floating_point:
                    m._buffers[name] = F.cast(b, dtype)
        return self

    # -- placement -------------------------------------------------------------------------
    def to(self, device: Any) -> Module:
        """Move every parameter and buffer to ``device`` (parameters keep their identity)."""
        for p in self.parameters():
            p._swap_data(p.to(device), any_device=True)
            if p.grad is not None:
                p.grad = p.grad.to(device)
        for m in self.modules():
            for name, b in list(m._buffers.items()):
                if b is not None:
                    m._buffers[name] = b.to(device)
        return self

    def to_global(self, placement: Any = None, sbp: Any = None) -> Module:
        """Place every parameter on ``placement`` with ``sbp`` (default broadcast) in the jobs
        that trace this module: data parallel with broadcast weights and split inputs,
        model parallel with split weights, pipeline stages by giving each stage's modules
        their own placement.  (Eager parameters stay local tensors.)"""
        from actorflow.frontend.sbp import as_sbp, broadcast

        for p in self.parameters():
            info = info_of(p)
            info.placement = placement
            info.sbp = broadcast if sbp is None else as_sbp(sbp)
        return self

    def __repr__(self) -> str:
        lines = [f"({k}): {m!r}".replace("\n", "\n  ") for k, m in self._modules.items()]
        extra = self.extra_repr()
        if not lines:
            return f"{type(self).__name__}({extra})"
        return f"{type(self).__name__}(\n  " + "\n  ".join(lines) + "\n)"

    def extra_repr(self) -> str:
        return ""


def _as_tensor(value: Any, like: Any) -> Any:
    if hasattr(value, "numpy") and hasattr(value, "shape"):
        return value
    return make_tensor(np.asarray(value, dtype=str(like.dtype)), device=like.device)


def _buffer_in(job: Any, b: Any) -> Any:
    """A buffer read in a job: a constant of the job (its value at trace time)."""
    table: dict[int, tuple[Any, Any]] = job.__dict__.setdefault("_buffer_consts", {})
    hit = table.get(id(b))
    if hit is None:
        hit = table[id(b)] = (b, job.constant(np.asarray(b.numpy())))
    return hit[1]


__all__ = ["Module", "Parameter", "make_parameter"]
