"""The four ways the oracle runs an op example, each returning the output as numpy:

* ``kernel``: the op definition itself (inference, outputs preallocated from it, the kernel
  writing in place) with ``ctx.xp`` numpy or the device's array module;
* ``eager``: the public API (``actorflow.functional`` / ``af``) on eager tensors on the CPU
  or the device;
* ``job``: many ops traced into one ``af.Job``, compiled with ``af.compile`` and run by an
  ``af.Session``, inputs fed every piece.

Ops with no functional name (``RAW`` in the op table) are issued as their op expression,
the call every functional makes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import actorflow as af
import actorflow.functional as F
from actorflow.frontend.dispatch import op_expr
from actorflow.kernels import KernelContext, get_op
from actorflow.plan.model import BlobDesc
from tests.kernels.draws import Example
from tests.kernels.op_table import RAW, OpCase


def kernel(op_type: str, ex: Example, xp: Any = np) -> np.ndarray:
    """Infer, preallocate on ``xp``, run; the kernel must write into the given output.  On
    a device it runs on device 0 inside a non-blocking stream, as a unit launches it, and
    is read after the stream's event (the emulated device computes on the stream's own
    thread, so a kernel that reads a result before its stream got there reads poison)."""
    op = get_op(op_type)
    descs = {k: BlobDesc(v.shape, v.dtype.name) for k, v in ex.ins.items()}
    inferred = op.infer_checked(op_type, descs, ex.attrs)
    if xp is np:
        outs = {k: np.full(d.shape, 123, d.dtype) for k, d in inferred.items()}
        _launch(op, op_type, ex, np, dict(ex.ins), outs)
        return outs["out"]
    with xp.cuda.Device(0):
        stream = xp.cuda.Stream(non_blocking=True)
        try:
            dev_ins = {k: xp.asarray(v) for k, v in ex.ins.items()}
            outs = {k: xp.full(d.shape, 123, d.dtype) for k, d in inferred.items()}
            with stream:
                _launch(op, op_type, ex, xp, dev_ins, outs)
                done = stream.record()
            done.synchronize()
            return xp.asnumpy(outs["out"])
        finally:
            if hasattr(stream, "close"):
                stream.close()  # the emulated stream's thread (CuPy's needs no closing)


def _launch(op: Any, op_type: str, ex: Example, xp: Any, ins: dict, outs: dict) -> None:
    before = {k: id(v) for k, v in outs.items()}
    op.kernel(KernelContext(xp, ex.piece, 0, op_type), ins, outs, ex.attrs)
    assert {k: id(v) for k, v in outs.items()} == before, f"{op_type} replaced its output"
    assert isinstance(outs["out"], xp.ndarray), f"{op_type}: its output left the array module"


def _issue(case: OpCase, ts: dict[str, Any], attrs: dict[str, Any]) -> Any:
    if case.api == RAW:
        return op_expr(case.op, tuple(ts))(ts, dict(attrs))
    return case.api(F, ts, dict(attrs))


def eager(case: OpCase, ex: Example, device: str) -> np.ndarray:
    if not ex.ins:  # a generator: issued on the device (af.full/arange/randn's path)
        from actorflow.frontend.eager_tensor import EAGER_LOCAL

        out = EAGER_LOCAL.apply_on(op_expr(case.op, ()), dict(ex.attrs), device)
    else:
        out = _issue(case, {k: af.tensor(v, device=device) for k, v in ex.ins.items()},
                     ex.attrs)
    assert str(out.device).startswith(device), f"{case.op}: result on {out.device}"
    return np.asarray(out.numpy())


PLACED = ("variable_part", "const_array")  # put in a job as af.variable / numpy arguments


def _placed(j: af.Job, op: str, attrs: dict[str, Any]) -> Any:
    """A variable (``Job.variable``: the compiler owns its region) or a constant array
    (``Job.constant``, what a numpy argument becomes)."""
    if op == "const_array":
        return j.constant(np.asarray(attrs["value"], attrs["dtype"]).reshape(attrs["shape"]))
    init = {k: attrs[k] for k in ("value", "low", "high") if k in attrs}
    return j.variable(f"{op}.var", tuple(attrs["logical_shape"]), attrs["dtype"],
                      init=attrs["init"], seed=attrs["seed"], std=attrs["std"], **init)


def job(cases: list[tuple[OpCase, Example]], device: str, pieces: int) -> list[dict]:
    """The cases traced into jobs, compiled, run for ``pieces`` pieces: the outputs of each
    piece by op type.  Ops with inputs (fed each piece) share one job; generators run as
    source tasks in a job of their own (a job mixing fed inputs and sources never gets its
    first piece: see /work/notes/kernels.md)."""
    fed = [(c, ex) for c, ex in cases if ex.ins or c.op in PLACED]
    sources = [(c, ex) for c, ex in cases if not (ex.ins or c.op in PLACED)]
    results: list[dict] = [{} for _ in range(pieces)]
    place = af.placement(device, ranks=[0])
    if fed:
        with af.Job("oracle", placement=place) as j:
            feeds = {}
            for case, ex in fed:
                ts = {}
                for k, v in ex.ins.items():
                    ts[k] = j.input(f"{case.op}.{k}", v.shape, v.dtype.name)
                    feeds[f"{case.op}.{k}"] = v
                out = _issue(case, ts, ex.attrs) if ts else _placed(j, case.op, ex.attrs)
                j.output(case.op, out)
        plan = af.compile(j)
        _on(plan, device)
        with af.Session(plan, timeout=60) as s:
            for piece in range(pieces):
                got = s.run(feeds)
                results[piece].update(got if isinstance(got, dict) else {fed[0][0].op: got})
    if sources:
        with af.Job("oracle_sources", placement=place, pieces=pieces) as j:
            for case, ex in sources:
                j.output(case.op, j.add("source", {}, {"kernel": case.op,
                                                       "kernel_attrs": dict(ex.attrs)},
                                        name=f"{case.op}.source", place=place))
        with af.Session(af.compile(j), timeout=60) as s:  # (sources run on the host)
            for name, values in s.run_to_end().items():
                for piece, v in enumerate(values):
                    results[piece][name] = v
    return results


def _on(plan: af.Plan, device: str) -> None:
    """The job's ops really run on ``device`` (the compiler put regsts there)."""
    where = {d.mem_case.split(":")[0] for t in plan.tasks for d in t.produced.values()
             if t.exec_sequence and t.task_type not in ("input", "output", "source")}
    want = "host" if device == "cpu" else device
    assert where <= {want, "host"} and (want in where or not where), \
        f"the job's ops ran on {where}, not on {device}"
