"""The compiler: a job (logical op graph) -> a Plan (tasks and regst descs).

Steps: infer logical shapes (``graph``), choose devices and SBP signatures and lower
every op to per-device kernels plus boxing (``lower``, geometry in ``boxing``), merge
chains on one device into tasks (``merge``), then emit tasks, regst descs, comm_net tasks
and thread ids (``emit``).  The result is validated (including the dry run) before it is
returned.
"""

from __future__ import annotations

import gc
from typing import Any, Protocol, runtime_checkable

from actorflow.errors import CompileError
from actorflow.plan.compiler.emit import Emitter, build_plan
from actorflow.plan.compiler.graph import JobSpec, LogicalOp, infer_job
from actorflow.plan.compiler.lower import Lowering
from actorflow.plan.compiler.merge import group_nodes
from actorflow.plan.compiler.trees import DEFAULT_WIDTH
from actorflow.plan.model import Plan


def compile_job(job: JobSpec, machines: int = 1, devices_per_machine: int = 1, *,
                merge: bool = True, unit_per_task: bool = False,
                validate: bool = True, fan_width: int = DEFAULT_WIDTH,
                gated: bool = False) -> Plan:
    """Lower ``job`` onto ``machines`` x ``devices_per_machine`` ranks; return a valid Plan.

    ``merge=False`` keeps one task per kernel; ``unit_per_task=True`` gives every task its
    own execution unit (thread or process) instead of one per device.  ``fan_width``
    bounds fan-in and fan-out: gathers, reductions, scatters and broadcasts over more
    pieces or machines than that go through trees of that width.  ``gated=True`` leaves
    tasks with no input unpaced: a multi-job plan paces them with the main job's identity
    ticks (``compile_jobs``).
    """
    if machines < 1 or devices_per_machine < 1:
        raise CompileError(f"job '{job.name}': machines ({machines}) and devices_per_machine "
                           f"({devices_per_machine}) must be >= 1")
    if isinstance(fan_width, bool) or not isinstance(fan_width, int) or fan_width < 2:
        raise CompileError(f"job '{job.name}': fan_width must be an int >= 2, got {fan_width!r}")
    if job.register_num < 1:
        raise CompileError(f"job '{job.name}': register_num must be >= 1, got {job.register_num}")
    infer_job(job)
    # the compiler allocates many small objects that never form cycles; the cyclic GC
    # would rescan them over and over (a 10,000-op job compiles ~2x faster without it)
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        low = Lowering(job, machines, devices_per_machine, fan_width)
        nodes = low.run()
        groups = group_nodes(nodes, merge=merge)
        emitter = Emitter(nodes, groups, machines, devices_per_machine, unit_per_task,
                          fan_width, gated=gated)
        tasks = emitter.run()
        ctrl: dict = {"sbp": dict(low.choices)}
        trees = {**low.boxer.trees, **emitter.relays}
        if trees:
            ctrl["trees"] = trees
        variables = [o.name for o in job.ops if o.op_type == "variable_part"]
        plan = build_plan(tasks, job.name, machines, devices_per_machine, job.num_pieces,
                          job.names("input"), job.output_names(), variables,
                          ctrl)
        if validate:
            plan.validate()
    finally:
        if gc_was_enabled:
            gc.enable()
    return plan


@runtime_checkable
class TracedJob(Protocol):
    """Anything that carries a traced job graph: ``actorflow.Job`` (frontend) satisfies it.

    The launcher compiles job files through this, so it needs only ``plan`` (below it),
    never the frontend that traced the job (above it)."""

    @property
    def spec(self) -> JobSpec: ...


def compile_traced(job: TracedJob | JobSpec, machines: int = 1, devices_per_machine: int = 1,
                   **options: Any) -> Plan:
    """``compile_job`` for a traced job (``af.Job``) or its bare ``JobSpec``; ``options`` are
    ``compile_job``'s keywords (``merge``, ``unit_per_task``, ``validate``, ``fan_width``)."""
    spec = job if isinstance(job, JobSpec) else job.spec
    return compile_job(spec, machines, devices_per_machine, **options)


__all__ = ["CompileError", "JobSpec", "LogicalOp", "TracedJob", "compile_job", "compile_traced"]
