"""actorflow: a Python re-creation of OneFlow's actor runtime.

A Plan (what to run) is plain data; a Session runs it on actors in this process;
``flowlaunch`` runs it over processes and machines.  Outside a job, tensor ops run
eagerly on a virtual machine of instructions and streams (``af.tensor``, ``af.sync``).
"""

import types
from typing import Any

import actorflow.trace as _trace_pkg
from actorflow import errors
from actorflow.eager.device import Device
from actorflow.eager.device import as_device as device
from actorflow.frontend import functional, sbp
from actorflow.frontend import global_tensor as _global_tensor
from actorflow.frontend.creation import (
    arange,
    counters,
    full,
    ones,
    randn,
    sync,
    tensor,
    zeros,
)
from actorflow.frontend.creation import trace as _eager_trace
from actorflow.frontend.eager_tensor import EagerTensor
from actorflow.frontend.global_tensor import EagerGlobalTensor
from actorflow.frontend.job import (
    Job,
    compile,
    input,
    job,
    output,
    random_input,
    variable,
)
from actorflow.frontend.placement import placement
from actorflow.frontend.variables import read_variable
from actorflow.plan import Plan, PlanBuilder, load_plan, save_plan
from actorflow.session import ClusterSession, Session
from actorflow.spmd import env

_global_tensor.EAGER_GLOBAL.device_of = env.device  # LOCAL_RANK picks the CUDA device

__version__ = "0.1.0"


class _TracePackage(types.ModuleType):
    """``af.trace`` is the ``actorflow.trace`` package (recorders, readers) and, called as
    ``with af.trace("dir"):``, the context that records eager instructions.  A plain
    function of that name would be replaced by the package the first time it is imported,
    so the package's module object is made callable instead."""

    def __call__(self, directory: Any) -> Any:
        return _eager_trace(directory)


_trace_pkg.__class__ = _TracePackage
trace = _trace_pkg

__all__ = ["ClusterSession", "Device", "EagerGlobalTensor", "EagerTensor", "Job", "Plan",
           "PlanBuilder", "Session", "__version__", "arange", "compile", "counters", "device",
           "env", "errors", "full", "functional", "input", "job", "load_plan", "ones", "output",
           "placement", "randn", "random_input", "read_variable", "save_plan", "sbp", "sync",
           "tensor", "trace", "variable", "zeros"]
