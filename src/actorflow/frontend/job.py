"""Jobs: trace ordinary-looking tensor code into a logical op graph the compiler lowers.

    P = af.placement("cpu", ranks=[0, 1])
    with af.Job("mlp", pieces=4) as job:
        x = af.random_input("x", (8, 16), seed=1, placement=P, sbp=af.sbp.split(0))
        w = af.variable("w", (16, 4), init="normal", seed=2, placement=P)
        af.output("y", F.relu(x @ w))
    plan = af.compile(job, machines=2)

or, the same, as a decorated function returning its outputs:

    @af.job(pieces=4)
    def mlp():
        ...
        return {"y": F.relu(x @ w)}

Inputs enter the plan on the first rank of their placement and are boxed to their SBP;
variables live in their actors across pieces (``af.read_variable(session, name)`` reads
them after a run in this process; a variable given to ``af.output`` is also delivered by
``flowlaunch``); every op of a job reads tensors of the same job.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from actorflow.errors import ArgumentTypeError, CompileError, OpError, UsageError
from actorflow.frontend import microbatch
from actorflow.frontend.placement import Placement, placement
from actorflow.frontend.sbp import SbpParallel, as_sbp, broadcast, partial_sum
from actorflow.frontend.tensor import Tensor
from actorflow.kernels.checkpoint import is_checkpoint
from actorflow.kernels.checkpoint import read_variable as read_checkpoint_variable
from actorflow.kernels.ops.generators import INITS
from actorflow.plan.compiler import compile_job
from actorflow.plan.compiler.graph import JobSpec, LogicalOp, infer_op
from actorflow.plan.model import Plan

_STACK: list[Job] = []


def tracing() -> Job | None:
    """The job being traced, or None outside ``with af.Job``."""
    return _STACK[-1] if _STACK else None


def current_job() -> Job:
    if not _STACK:
        raise CompileError("no job is being traced: use 'with af.Job(...):' or '@af.job'")
    return _STACK[-1]


class Job:
    """A logical graph being traced, plus its settings (pieces, register_num, placement)."""

    def __init__(self, name: str = "job", *, pieces: int | None = None, register_num: int = 2,
                 placement: Placement | None = None, micro_batches: int = 1) -> None:
        if register_num < 1:
            raise UsageError(f"job '{name}': register_num must be >= 1, got {register_num}")
        if pieces is not None and pieces < 1:
            raise UsageError(f"job '{name}': pieces must be >= 1 or None, got {pieces}")
        if isinstance(micro_batches, bool) or not isinstance(micro_batches, int) or \
                micro_batches < 1:
            raise UsageError(f"job '{name}': micro_batches must be an int >= 1, got "
                             f"{micro_batches!r}")
        self.micro_batches = micro_batches
        self._rate: dict[str, int] = {}  # op name -> pieces per request (1 or micro_batches)
        self._repeats: dict[str, Tensor] = {}
        self.spec = JobSpec(name=name, num_pieces=pieces, register_num=register_num)
        self.default_placement = placement or _default_placement()
        self.tensors: dict[str, Tensor] = {}
        self._ops: dict[str, LogicalOp] = {}
        self._count: dict[str, int] = {}
        self._register_num: list[int] = []

    @property
    def name(self) -> str:
        return self.spec.name

    def __enter__(self) -> Job:
        _STACK.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _STACK.remove(self)
        if exc[0] is None and self.micro_batches > 1:
            microbatch.close_open_ends(self)

    def __repr__(self) -> str:
        return f"Job({self.name!r}, ops={len(self.spec.ops)})"

    @contextlib.contextmanager
    def settings(self, *, register_num: int) -> Iterator[None]:
        """Ops traced inside use this register_num instead of the job's default."""
        self._register_num.append(register_num)
        try:
            yield
        finally:
            self._register_num.pop()

    # -- graph building --------------------------------------------------------------------
    def _fresh(self, base: str) -> str:
        n = self._count.get(base, 0)
        self._count[base] = n + 1
        name = f"{base}{n}"
        return name if name not in self._ops else self._fresh(base)

    def _check_name(self, name: str) -> None:
        if not isinstance(name, str) or not name or "/" in name:
            raise UsageError(f"job '{self.name}': name {name!r} must be a non-empty string "
                             "without '/'")
        if name in self._ops:
            raise UsageError(f"job '{self.name}': name '{name}' is used twice")

    def add(self, op_type: str, inputs: dict[str, Tensor], attrs: dict[str, Any] | None = None,
            *, name: str | None = None, place: Placement | None = None,
            sbp: SbpParallel | None = None) -> Tensor:
        """Append one op; infer its output now so mistakes point at the traced line."""
        name = name or self._fresh(op_type)
        tracing = _STACK[-1] if _STACK else self
        for t in inputs.values():
            if t.job is not self or tracing is not self:
                if t.job is self:
                    raise CompileError(f"op '{name}' ({op_type}) reads tensor '{t.name}' of job "
                                       f"'{self.name}' while job '{tracing.name}' is traced")
                raise CompileError(f"op '{name}' ({op_type}) reads tensor '{t.name}' of job "
                                   f"'{t.job.name}', not of job '{self.name}'")
        if self.micro_batches > 1 and inputs:
            inputs = microbatch.align_rates(self, name, op_type, inputs)
        if place is None and inputs:
            place = _widest(name, list(inputs.values()))
        op = LogicalOp(name, op_type, {k: t.name for k, t in inputs.items()}, dict(attrs or {}),
                       register_num=self._register_num[-1] if self._register_num else None)
        if place is not None and op_type in _INHERITS:
            op.device_type, op.ranks = place.device_type, place.ranks
        # other ops: ranks None, the compiler places them with their widest input too
        op.sbp = sbp.code if sbp is not None else None
        try:
            op.out = infer_op(op, {k: self._ops[t.name].blob for k, t in inputs.items()})
        except OpError as e:
            raise CompileError(f"job '{self.name}': {e}") from e
        self.spec.ops.append(op)
        self._ops[name] = op
        if self.micro_batches > 1:
            microbatch.set_rate(self, op, inputs)
        if op.out is None:
            return None  # type: ignore[return-value]
        t = Tensor(self, name, op.out.shape, op.out.dtype, place or self.default_placement, sbp)
        self.tensors[name] = t
        return t

    def input(self, name: str, shape: tuple[int, ...], dtype: str = "float32", *,
              placement: Placement | None = None, sbp: Any = None) -> Tensor:
        """A tensor the client feeds every piece (``Session.run({name: array})``)."""
        self._check_name(name)
        attrs = {"shape": [int(s) for s in shape], "dtype": np.dtype(dtype).name}
        return self._enter("input", name, attrs, placement, sbp)

    def random_input(self, name: str, shape: tuple[int, ...], dtype: str = "float32", *,
                     seed: int = 0, mean: float = 0.0, std: float = 1.0,
                     placement: Placement | None = None, sbp: Any = None) -> Tensor:
        """A tensor generated every piece: ``default_rng([seed, piece]).standard_normal``."""
        self._check_name(name)
        attrs = {"kernel": "random_normal", "kernel_attrs": {
            "shape": [int(s) for s in shape], "dtype": np.dtype(dtype).name, "seed": int(seed),
            "mean": float(mean), "std": float(std)}}
        return self._enter("source", name, attrs, placement, sbp)

    def _enter(self, kind: str, name: str, attrs: dict, place: Placement | None,
               sbp: Any) -> Tensor:
        place = place or self.default_placement
        first = _single(place)
        t = self.add(kind, {}, attrs, name=name, place=first)
        if self.micro_batches > 1:  # one request's batch -> micro_batches pieces
            t = microbatch.unpack(self, t)
        if place is first and sbp is None:
            return t
        sbp = as_sbp(sbp) if sbp is not None else broadcast
        _check_axis(name, sbp, len(t.shape))
        _no_partial(name, sbp, "an input")
        return self.add("to_global", {"in": t}, name=f"{name}.global", place=place, sbp=sbp)

    def variable(self, name: str, shape: tuple[int, ...], dtype: str = "float32", *,
                 init: str = "zeros", seed: int = 0, std: float = 1.0,
                 path: str | Path | None = None, placement: Placement | None = None,
                 sbp: Any = None, requires_grad: bool = False, **init_attrs: Any) -> Tensor:
        """A parameter kept in its actors across pieces: zeros, a constant, a seeded normal or
        uniform draw (``low=``, ``high=``), inline values (``value=``), a .npy file or a
        checkpoint.  ``requires_grad=True``: ``loss.backward()`` in the job computes its
        gradient (``.grad``), and an optimizer's ``step()`` assigns it."""
        self._check_name(name)
        attrs: dict[str, Any] = {"logical_shape": [int(s) for s in shape],
                                 "dtype": np.dtype(dtype).name, "init": init, "seed": int(seed),
                                 "std": float(std), **init_attrs}
        if path is not None:
            attrs["init"], attrs["path"] = "file", str(Path(path).resolve())
            if is_checkpoint(path):  # a Session.save directory: any machine count loads it
                attrs["init"], attrs["checkpoint_name"] = "checkpoint", name
                read_checkpoint_variable(path, name, tuple(shape), np.dtype(dtype).name)
        if attrs["init"] not in INITS:
            raise UsageError(f"variable '{name}': init must be one of {', '.join(INITS)} "
                             f"(or give path=), not {init!r}")
        if attrs["init"] == "file" and "path" not in attrs:
            raise UsageError(f"variable '{name}': init='file' needs path=")
        n = len(shape)
        attrs["begin"], attrs["end"] = [0] * n, attrs["logical_shape"]
        place = placement or self.default_placement
        sbp = as_sbp(sbp) if sbp is not None else broadcast
        _check_axis(name, sbp, n)
        _no_partial(name, sbp, "a variable")
        t = self.add("variable_part", {}, attrs, name=name, place=place, sbp=sbp)
        if requires_grad:
            t.requires_grad_()
        return t

    def constant(self, value: np.ndarray, place: Placement | None = None) -> Tensor:
        value = np.asarray(value)
        attrs = {"value": value.ravel().tolist(), "shape": list(value.shape),
                 "dtype": value.dtype.name}
        return self.add("const_array", {}, attrs, place=place or self.default_placement,
                        sbp=broadcast)

    def output(self, name: str, tensor: Tensor) -> None:
        """Hand ``tensor`` to the client every piece under ``name`` (boxed to one device)."""
        if not isinstance(name, str) or not name:
            raise UsageError(f"job '{self.name}': output name {name!r} must be a non-empty string")
        if name in self.outputs:
            raise UsageError(f"job '{self.name}': output name '{name}' is used twice")
        if not isinstance(tensor, Tensor):
            raise ArgumentTypeError(f"output '{name}': expected a Tensor, not "
                                    f"{type(tensor).__name__}")
        # outputs have their own namespace: a variable 'w' may be output as 'w'
        if self.micro_batches > 1:
            tensor = microbatch.pack(self, tensor)
        self.add("output", {"in": tensor}, {"name": name})

    def backward(self, root: Tensor, gradient: Any = None, retain_graph: bool = False) -> None:
        """``root.backward()`` while this job is traced: the gradient ops join the job.  With
        micro-batches the seed is ``1/micro_batches`` and each leaf's gradient is summed over
        the micro-batches by an ``acc`` task, so the update sees the whole batch's mean."""
        from actorflow.frontend.autograd.engine import run_backward

        k = self.micro_batches
        if k == 1:
            run_backward([root], [gradient], retain_graph)
            return
        run_backward([root], [gradient], retain_graph, scale=1.0 / k,
                     leaf_hook=lambda leaf, g: microbatch.accumulate(self, leaf, g))

    # -- compiling ---------------------------------------------------------------------------
    def compile(self, machines: int = 1, devices_per_machine: int = 1, **kw: Any) -> Plan:
        return compile_job(self.spec, machines, devices_per_machine, **kw)

    @property
    def inputs(self) -> list[str]:
        return self.spec.names("input")

    @property
    def outputs(self) -> list[str]:
        return self.spec.output_names()


_INHERITS = ("input", "source", "to_global", "variable_part", "const_array", "assign")


def assign_variable(ref: Tensor, value: Tensor) -> Tensor:
    """``F.assign``: write ``value`` into variable ``ref`` each piece (see kernels/ops/assign)."""
    job = ref.job
    op = job._ops.get(ref.name)
    if op is None or op.op_type != "variable_part":
        raise UsageError(f"assign(): '{ref.name}' is not a variable of job '{job.name}'; only "
                         "tensors made by af.variable can be assigned")
    if tuple(value.shape) != tuple(ref.shape):
        raise UsageError(f"assign(): value '{value.name}' has shape {tuple(value.shape)}, "
                         f"variable '{ref.name}' has {tuple(ref.shape)}")
    if value.dtype != ref.dtype:
        raise UsageError(f"assign(): value '{value.name}' is {value.dtype}, variable "
                         f"'{ref.name}' is {ref.dtype}; cast it first")
    return job.add("assign", {"ref": ref, "value": value}, place=ref.placement, sbp=ref.sbp)


def _default_placement() -> Placement:
    return placement("cpu", ranks=[0])


def _single(p: Placement) -> Placement:
    return p if p.parallel_num == 1 else placement(p.device_type, ranks=[p.ranks[0]])


def _widest(name: str, tensors: list[Tensor]) -> Placement:
    types = sorted({t.placement.device_type for t in tensors})
    if len(types) > 1:
        raise CompileError(f"op '{name}' mixes device types {types} in its inputs; move them "
                           "with to_global first")
    return max((t.placement for t in tensors), key=lambda p: p.parallel_num)


def _check_axis(name: str, sbp: SbpParallel, ndim: int) -> None:
    axis = getattr(sbp, "axis", None)
    if axis is not None and axis >= ndim:
        raise UsageError(f"'{name}': cannot use {sbp!r} on a tensor of rank {ndim} (axis must "
                         f"be < {ndim})")


def _no_partial(name: str, sbp: SbpParallel, what: str) -> None:
    if sbp is partial_sum:
        raise UsageError(f"'{name}': {what} holds whole values; use sbp.split(axis) or "
                         "sbp.broadcast (partial_sum is what ops like matmul produce)")


def job(fn: Callable[[], Any] | None = None, *, name: str | None = None,
        pieces: int | None = None, register_num: int = 2,
        placement: Placement | None = None) -> Any:
    """Decorator: trace ``fn()`` into a Job; a returned tensor/dict/tuple becomes outputs."""
    def wrap(f: Callable[[], Any]) -> Job:
        j = Job(name or f.__name__, pieces=pieces, register_num=register_num,
                placement=placement)
        with j:
            result = f()
        if isinstance(result, Tensor):
            j.output("out", result)
        elif isinstance(result, dict):
            for k, v in result.items():
                j.output(k, v)
        elif isinstance(result, (list, tuple)):
            for i, v in enumerate(result):
                j.output(f"out{i}", v)
        elif result is not None:
            raise ArgumentTypeError(f"job '{j.name}': return a Tensor, a dict or a tuple of "
                                    "Tensors, "
                                    f"not {type(result).__name__}")
        return j
    return wrap(fn) if fn is not None else wrap


# module-level helpers reading the job being traced -----------------------------------------
def input(name: str, shape: tuple[int, ...], dtype: str = "float32", **kw: Any) -> Tensor:
    return current_job().input(name, shape, dtype, **kw)


def random_input(name: str, shape: tuple[int, ...], dtype: str = "float32", **kw: Any) -> Tensor:
    return current_job().random_input(name, shape, dtype, **kw)


def variable(name: str, shape: tuple[int, ...], dtype: str = "float32", **kw: Any) -> Tensor:
    return current_job().variable(name, shape, dtype, **kw)


def output(name: str, tensor: Tensor) -> None:
    current_job().output(name, tensor)


def compile(job: Job | list[Job] | tuple[Job, ...], machines: int = 1,
            devices_per_machine: int = 1, **kw: Any) -> Plan:
    """Lower a traced job onto ``machines`` x ``devices_per_machine`` ranks: a validated Plan.

    A list of jobs gives one plan with a main job that runs them by name
    (``Session.run("eval", feeds)``); so does one job that assigns a variable (the main
    job's lock is what keeps its pieces in order)."""
    from actorflow.plan.compiler.multi import compile_jobs

    jobs = list(job) if isinstance(job, (list, tuple)) else [job]
    for j in jobs:
        if not isinstance(j, Job):
            raise ArgumentTypeError(f"af.compile expects a Job or a list of Jobs, not "
                                    f"{type(j).__name__}")
    if len(jobs) == 1 and not isinstance(job, (list, tuple)) and not any(
            o.op_type == "assign" for o in jobs[0].spec.ops):
        return jobs[0].compile(machines, devices_per_machine, **kw)
    return compile_jobs([j.spec for j in jobs], machines, devices_per_machine, **kw)
