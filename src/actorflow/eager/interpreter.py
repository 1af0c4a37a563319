"""The eager local interpreter: one op expression + input tensors -> instructions.

For each call it checks that every input lives on one device, infers the outputs with
the op definition the compiler uses (``OpDef.infer_checked``; cached per op, input
shapes/dtypes and attrs, so a loop of tiny ops infers once), makes the output blob
objects, and issues one kernel instruction on the device's compute stream.  It returns
before the kernel runs.  The frontend hands it the tensor class to wrap outputs in.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from actorflow.eager.blob import BlobObject, meta_of
from actorflow.eager.builder import InstructionsBuilder
from actorflow.eager.device import CPU, Device, as_device
from actorflow.eager.env import get_vm
from actorflow.eager.tensor import caller_where
from actorflow.errors import ArgumentTypeError, UsageError
from actorflow.kernels.blob import BlobDesc

CACHE_LIMIT = 4096


def _freeze(v: Any) -> Any:
    """A hashable key of an attr value that tells 0, 0.0 and False apart (they are equal
    and hash alike, but give different result dtypes)."""
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _freeze(x)) for k, x in v.items()))
    return (v.__class__, v)


class EagerLocalInterpreter:
    """Runs op expressions on eager local tensors through the process's VM."""

    name = "eager.local"

    def __init__(self, tensor_cls: Any) -> None:
        self.tensor_cls = tensor_cls
        self._plans: dict[Any, Any] = {}  # (expr, input metas, attrs) -> IssuePlan
        self.global_interp: Any = None  # the eager global interpreter (frontend sets it)

    def apply(self, expr: Any, inputs: dict[str, Any], attrs: dict[str, Any]) -> Any:
        tensors = []
        device: Device | None = None
        names = expr.opdef.input_names(inputs)
        for k in names:
            t = inputs.get(k)
            if t is None:
                break  # a wrong input name: inference names the op and what it expects
            b = t._blob
            if device is None:
                device = b.device
            elif b.device is not device:
                raise _mixed_devices(expr.op_type, inputs)
            tensors.append(t)
        if len(tensors) != len(inputs):
            self._infer_outputs(expr, {k: t._blob for k, t in inputs.items()}, attrs)
        vm = get_vm()
        return self.plan(vm, expr, tensors, attrs, device or CPU).run(tensors, attrs,
                                                                      caller_where())

    def apply_on(self, expr: Any, attrs: dict[str, Any], device: Any) -> Any:
        """An op with no inputs (a generator: constant, arange, ...) on ``device``."""
        vm = get_vm()
        return self.plan(vm, expr, [], attrs, as_device(device)).run((), attrs, caller_where())

    def plan(self, vm: Any, expr: Any, tensors: list[Any], attrs: dict[str, Any],
             device: Device) -> Any:
        """The issue plan of ``expr`` on these input tensors (in the op definition's input
        order, all on ``device``) and attrs: cached per (op, input metas, attrs)."""
        metas = [expr, device]  # a generator's plan is per device (it has no input metas)
        for t in tensors:
            metas.append(t._blob.meta)
        try:
            key: Any = (*metas, *((k, v.__class__, v) for k, v in attrs.items()))
            plan = self._plans.get(key)
        except TypeError:  # list-valued attrs
            key = (*metas, _freeze(attrs))
            plan = self._plans.get(key)
        if plan is None or plan.vm is not vm:
            names = expr.opdef.input_names({f"in_{i}": t for i, t in enumerate(tensors)}) \
                if expr.opdef.variadic else list(expr.opdef.inputs)
            blobs = {k: t._blob for k, t in zip(names, tensors)}
            descs = self._infer_outputs(expr, blobs, attrs)
            outs = tuple((k, meta_of(d.shape, d.dtype, device)) for k, d in descs.items())
            itype, stream = vm.route(f"{device.type}.compute", device)
            if len(self._plans) >= CACHE_LIMIT:
                self._plans.clear()
            plan = self._plans[key] = vm.core.IssuePlan(
                vm, expr, tuple(names), attrs, outs, itype, stream, self.tensor_cls._from_blob,
                _ufunc(expr.opdef.ufunc, [t._blob.meta for t in tensors], attrs, outs, device))
        return plan

    def _infer_outputs(self, expr: Any, blobs: dict[str, BlobObject],
                       attrs: dict[str, Any]) -> Any:
        return expr.opdef.infer_checked(expr.op_type, {k: BlobDesc(b.shape, b.dtype) for k, b
                                                       in blobs.items()}, attrs)

    # -- tensors from host values ----------------------------------------------------------
    def from_array(self, value: Any, dtype: Any = None, device: Any = None) -> Any:
        """A new tensor holding a copy of ``value`` (host data) on ``device``."""
        dev = as_device(device) if device is not None else CPU
        try:
            arr = np.array(value, dtype=dtype, copy=True)
        except (TypeError, ValueError) as e:
            raise ArgumentTypeError(f"af.tensor(): cannot make an array of {type(value).__name__}"
                                    f"{'' if dtype is None else f' with dtype {dtype!r}'}: "
                                    f"{e}") from e
        if arr.dtype.kind not in "biuf":
            raise ArgumentTypeError(f"af.tensor(): values of dtype {arr.dtype} are not "
                                    "supported (bool, integers and floats are)")
        if arr.dtype == np.float64 and dtype is None and not isinstance(value, np.ndarray):
            arr = arr.astype(np.float32)  # Python floats default to float32, as in torch
        vm = get_vm()
        host = vm.core.Blob(tuple(arr.shape), arr.dtype.name, CPU, arr)
        vm.adopt(host)
        if dev is CPU:
            return self.tensor_cls._from_blob(host, vm)
        builder = InstructionsBuilder(vm)
        out = builder.copy(host, dev, caller_where())
        builder.submit()
        vm.release(host)
        return self.tensor_cls._from_blob(out, vm)

    def constant_like(self, value: Any, like: list[Any]) -> Any:
        """A numpy value given where a tensor is expected, on the device of ``like``."""
        device = like[0].device if like else None
        arr = np.asarray(value)
        return self.from_array(arr, dtype=arr.dtype, device=device)

    def to_global(self, x: Any, placement: Any = None, sbp: Any = None) -> Any:
        if self.global_interp is not None:
            return self.global_interp.from_local(x, placement, sbp)
        raise UsageError("to_global() of an eager local tensor needs the eager global "
                         "interpreter (global tensors over a process group), which this "
                         "process does not have; inside 'with af.Job' it boxes lazy tensors")


def _ufunc(ufunc: Any, ins: list[Any], attrs: dict[str, Any], outs: tuple,
           device: Device) -> Any:
    """The op's (function, form, needs casting="unsafe") where the array module's own
    function computes in exactly the op's result dtype (found by a one-element dry run),
    else None: the kernel runs, which computes in the result dtype as OneFlow does.  So
    ``exp`` of bool or int8 (numpy: float16) giving float32, ``pow`` of int tensors (an
    int power) giving float32, ``int64 + float32`` (numpy: float64) and a number beside an
    integer tensor narrower than int64 (numpy refuses one outside the tensor's range; the
    op converts it, wrapping) take the kernel.  Devices always pass casting="unsafe"."""
    if ufunc is None or len(outs) != 1:
        return None if ufunc is None else (*ufunc, True)
    fn, form = ufunc
    want = np.dtype(outs[0][1].dtype)
    if form in ("ts", "st") and any(np.dtype(m.dtype).kind in "iu" and
                                    np.dtype(m.dtype).itemsize < 8 for m in ins):
        return None
    args: list[Any] = [np.zeros(1, m.dtype) for m in ins]
    if form in ("ts", "st"):
        args.insert(0 if form == "st" else 1, attrs["scalar"])
    elif form == "t0":
        args.append(0)
    try:
        with np.errstate(all="ignore"):
            natural = getattr(np, fn)(*args).dtype
    except (TypeError, ValueError, OverflowError):
        return None
    if natural != want:
        return None
    return (*ufunc, device.type != "cpu")


def _mixed_devices(op_type: str, inputs: dict[str, Any]) -> UsageError:
    where = ", ".join(f"{k} on {t.device}" for k, t in inputs.items())
    return UsageError(f"op '{op_type}': its input tensors are on different devices ({where}); "
                      "move them to one device with .to(device) first (Expected all tensors "
                      "to be on the same device, but found at least two devices)")
