"""actorflow: a Python re-creation of OneFlow's actor runtime.

A Plan (what to run) is plain data; a Session runs it on actors in this process;
``flowlaunch`` runs it over processes and machines.  Outside a job, tensor ops run
eagerly on a virtual machine of instructions and streams (``af.tensor``, ``af.sync``).

The public names below are imported on first use (PEP 562 ``__getattr__``): a
``flowlaunch`` worker imports ``actorflow.launcher.worker`` and must not pay for the
frontend, the eager VM, the compiler and the in-process Session that it never uses
(start-up time of ``flowlaunch sim --machines 16``: every worker imports this package).
"""

from __future__ import annotations

import importlib
import types
from typing import TYPE_CHECKING, Any

import actorflow.trace as _trace_pkg
from actorflow import errors

__version__ = "0.1.0"

# public name -> (module, attribute); attribute None: the module itself
_LAZY: dict[str, tuple[str, str | None]] = {
    "ClusterSession": ("actorflow.session", "ClusterSession"),
    "Size": ("actorflow.frontend.size", "Size"),
    "Tensor": ("actorflow.frontend.tensor", "TensorMethods"),
    "comm": ("actorflow.comm", None),
    "is_tensor": ("actorflow.frontend.tensor", "is_tensor"),
    "Device": ("actorflow.eager.device", "Device"),
    "EagerGlobalTensor": ("actorflow.frontend.global_tensor", "EagerGlobalTensor"),
    "EagerTensor": ("actorflow.frontend.eager_tensor", "EagerTensor"),
    "Job": ("actorflow.frontend.job", "Job"),
    "Plan": ("actorflow.plan.model", "Plan"),
    "PlanBuilder": ("actorflow.plan.builder", "PlanBuilder"),
    "Session": ("actorflow.session", "Session"),
    "arange": ("actorflow.frontend.creation", "arange"),
    "autograd": ("actorflow.frontend.autograd", None),
    "enable_grad": ("actorflow.frontend.autograd.mode", "enable_grad"),
    "is_grad_enabled": ("actorflow.frontend.autograd.mode", "is_grad_enabled"),
    "manual_seed": ("actorflow.frontend.functional_nn", "manual_seed"),
    "nn": ("actorflow.nn", None),
    "no_grad": ("actorflow.frontend.autograd.mode", "no_grad"),
    "optim": ("actorflow.optim", None),
    "set_grad_enabled": ("actorflow.frontend.autograd.mode", "set_grad_enabled"),
    "compile": ("actorflow.frontend.job", "compile"),
    "counters": ("actorflow.frontend.creation", "counters"),
    "device": ("actorflow.eager.device", "as_device"),
    "env": ("actorflow.spmd", "env"),
    "full": ("actorflow.frontend.creation", "full"),
    "functional": ("actorflow.functional", None),
    "input": ("actorflow.frontend.job", "input"),
    "job": ("actorflow.frontend.job", "job"),
    "load_plan": ("actorflow.plan.io", "load_plan"),
    "ones": ("actorflow.frontend.creation", "ones"),
    "output": ("actorflow.frontend.job", "output"),
    "placement": ("actorflow.frontend.placement", "placement"),
    "randn": ("actorflow.frontend.creation", "randn"),
    "random_input": ("actorflow.frontend.job", "random_input"),
    "read_variable": ("actorflow.frontend.variables", "read_variable"),
    "save_plan": ("actorflow.plan.io", "save_plan"),
    "sbp": ("actorflow.frontend.sbp", None),
    "sync": ("actorflow.frontend.creation", "sync"),
    "tensor": ("actorflow.frontend.creation", "tensor"),
    "variable": ("actorflow.frontend.job", "variable"),
    "zeros": ("actorflow.frontend.creation", "zeros"),
}


class _TracePackage(types.ModuleType):
    """``af.trace`` is the ``actorflow.trace`` package (recorders, readers) and, called as
    ``with af.trace("dir"):``, the context that records eager instructions.  A plain
    function of that name would be replaced by the package the first time it is imported,
    so the package's module object is made callable instead (the eager side is imported
    only when it is called)."""

    def __call__(self, directory: Any) -> Any:
        from actorflow.frontend.creation import trace as eager_trace

        return eager_trace(directory)


_trace_pkg.__class__ = _TracePackage
trace = _trace_pkg

__all__ = ["ClusterSession", "Device", "EagerGlobalTensor", "EagerTensor", "Job", "Plan",
           "PlanBuilder", "Session", "Size", "Tensor",
           "__version__", "arange", "autograd", "comm", "compile", "counters", "device",
           "enable_grad", "env", "errors", "full", "functional", "input", "is_grad_enabled",
           "is_tensor", "job", "load_plan", "manual_seed", "nn", "no_grad", "ones", "optim",
           "output", "placement", "randn",
           "random_input", "read_variable", "save_plan", "sbp", "set_grad_enabled", "sync",
           "tensor", "trace", "variable", "zeros"]


def __getattr__(name: str) -> Any:
    try:
        module, attr = _LAZY[name]
    except KeyError:
        value = _oneflow_name(name)
        globals()[name] = value
        return value
    mod = importlib.import_module(module)
    if module.startswith(("actorflow.frontend", "actorflow.eager", "actorflow.nn",
                          "actorflow.comm")):
        _wire_global_tensors()
    value = mod if attr is None else getattr(mod, attr)
    globals()[name] = value  # later look-ups skip __getattr__
    return value


def _oneflow_name(name: str) -> Any:
    """OneFlow's top-level names that are not in ``_LAZY``: dtype objects (``af.float32``,
    ``af.long``) and every functional op (``af.relu``, ``af.cat``), straight from the
    functional op registry, so an op declared later needs no edit here."""
    if not name.startswith("_") and name not in _submodules():
        from actorflow.kernels import dtype

        if name in dtype.DTYPES or name in dtype.ALIASES:
            return dtype.as_dtype(name)
        functional = importlib.import_module("actorflow.frontend.functional")
        _wire_global_tensors()
        op = functional.lookup(name)
        if op is not None:
            return op
    raise AttributeError(f"module 'actorflow' has no attribute {name!r}")


_SUBMODULES: set[str] = set()


def _submodules() -> set[str]:
    """actorflow's own modules and packages: ``from actorflow import spmd`` asks
    ``__getattr__`` first, which must then leave the import system to load it."""
    if not _SUBMODULES:
        import pkgutil

        _SUBMODULES.update(m.name for m in pkgutil.iter_modules(__path__))
    return _SUBMODULES


def _wire_global_tensors() -> None:
    """LOCAL_RANK picks the CUDA device of global tensors (spmd sits above frontend)."""
    from actorflow.frontend import global_tensor
    from actorflow.spmd import env

    global_tensor.EAGER_GLOBAL.device_of = env.device


def __dir__() -> list[str]:
    """Public names; the functional ops and dtypes too once the frontend is loaded (listing
    them must not load it: ``import actorflow`` stays cheap)."""
    import sys

    names = {*globals(), *_LAZY}
    functional = sys.modules.get("actorflow.frontend.functional")
    if functional is not None:
        from actorflow.kernels import dtype

        names |= {*functional.OPS.names(), *functional.ALIASES, *dtype.DTYPES, *dtype.ALIASES}
    return sorted(names)


if TYPE_CHECKING:  # what type checkers and IDEs see: the same names, eagerly
    from actorflow import comm, nn, optim
    from actorflow.eager.device import Device
    from actorflow.eager.device import as_device as device
    from actorflow.frontend import autograd, sbp
    from actorflow.frontend import functional_nn as functional
    from actorflow.frontend.autograd.mode import (
        enable_grad,
        is_grad_enabled,
        no_grad,
        set_grad_enabled,
    )
    from actorflow.frontend.creation import arange, counters, full, ones, randn, sync, tensor, zeros
    from actorflow.frontend.eager_tensor import EagerTensor
    from actorflow.frontend.functional_nn import manual_seed
    from actorflow.frontend.global_tensor import EagerGlobalTensor
    from actorflow.frontend.job import Job, compile, input, job, output, random_input, variable
    from actorflow.frontend.placement import placement
    from actorflow.frontend.size import Size
    from actorflow.frontend.tensor import TensorMethods as Tensor
    from actorflow.frontend.tensor import is_tensor
    from actorflow.frontend.variables import read_variable
    from actorflow.plan import Plan, PlanBuilder, load_plan, save_plan
    from actorflow.session import ClusterSession, Session
    from actorflow.spmd import env
