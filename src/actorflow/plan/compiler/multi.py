"""Several jobs, one plan (seed 001's CompileJobsAndMergePlans).

Each job is compiled on its own (``compile_job(..., gated=True)``: its tasks with no input
are left for the main job to pace), renumbered into one id space and tagged with its
``job_id``; the model-IO jobs (``__save__``/``__load__``) are added when there are
variables; every job's inputs and outputs become push and pull jobs (``pushpull``); then
the main job is built from every job's critical section and linked in
(``mainjob.link_main_job``).  Jobs naming one variable share its memory: each variable
part has one ``state_key``, and the runtime gives every node with that key one state per
machine.
"""

from __future__ import annotations

import copy

from actorflow.errors import CompileError
from actorflow.plan.compiler import compile_job
from actorflow.plan.compiler.graph import JobSpec, LogicalOp, infer_job
from actorflow.plan.compiler.mainjob import MAIN_JOB, link_main_job
from actorflow.plan.compiler.modelio import (
    LOAD_JOB,
    SAVE_JOB,
    checkpoint_layout,
    model_io_jobs,
    reads_of,
    variable_declarations,
    writes_of,
)
from actorflow.plan.compiler.pushpull import add_push_pull_jobs, is_push_pull
from actorflow.plan.compiler.trees import DEFAULT_WIDTH
from actorflow.plan.model import JobInfo, MachineInfo, Plan, Task


def compile_jobs(jobs: list[JobSpec], machines: int = 1, devices_per_machine: int = 1, *,
                 merge: bool = True, unit_per_task: bool = False, validate: bool = True,
                 model_io: bool = True, push_pull: bool = True,
                 fan_width: int = DEFAULT_WIDTH) -> Plan:
    """Compile ``jobs`` into one validated Plan with a main job driving them by name.

    ``push_pull=False`` feeds and fetches each job's own input/output tasks directly: one
    critical section per request instead of one per input, job and output (lower latency,
    less like seed 001)."""
    if not jobs:
        raise CompileError("compile_jobs needs at least one job")
    names = [j.name for j in jobs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise CompileError(f"job names must be unique in one plan; used twice: {dup}")
    for j in jobs:
        if is_push_pull(j.name) or j.name in (SAVE_JOB, LOAD_JOB, MAIN_JOB):
            raise CompileError(f"job name '{j.name}' is reserved for the jobs a multi-job plan "
                               "adds itself (push:/pull:, __save__, __load__, main)")
        if j.num_pieces is not None:
            raise CompileError(f"job '{j.name}': a job of a multi-job plan runs one piece per "
                               "request (Session.run/run_many); leave pieces=None")
        infer_job(j)
        assigned = [j.op(o.inputs["ref"]).name for o in j.ops if o.op_type == "assign"]
        twice = sorted({v for v in assigned if assigned.count(v) > 1})
        if twice:
            raise CompileError(f"job '{j.name}': variables {twice} are assigned more than once "
                               "in one piece; their order would be undefined (assign once, "
                               "from the combined value)")
    variables = variable_declarations(jobs)
    all_jobs = [_client_io_on_rank0(j) for j in jobs] + (
        model_io_jobs(variables) if model_io else [])
    tasks: list[Task] = []
    infos: list[JobInfo] = []
    next_desc = 0
    sbp: dict[str, dict] = {}
    for job_id, spec in enumerate(all_jobs):
        sub = compile_job(spec, machines, devices_per_machine, merge=merge,
                          unit_per_task=unit_per_task, validate=False, gated=True,
                          fan_width=fan_width)
        next_desc = _renumber(sub.tasks, job_id, spec.name, len(tasks), next_desc)
        tasks.extend(sub.tasks)
        sbp[spec.name] = dict(sub.ctrl.get("sbp", {}))
        feeds = [o.attrs.get("feed_name", o.name) for o in spec.ops if o.op_type == "input"]
        infos.append(JobInfo(spec.name, None, feeds, spec.output_names(), reads_of(spec),
                             job_id, reads_of(spec), writes_of(spec)))
    _one_unit_per_part(tasks)
    if push_pull:
        next_desc = add_push_pull_jobs(tasks, infos, next_desc)
    main = link_main_job(tasks, infos, machines, next_desc)
    infos.append(main)
    ctrl: dict = {"sbp": sbp}
    if model_io and variables:  # every machine's share carries it: rank 0 writes manifests
        ctrl["checkpoint"] = checkpoint_layout(tasks, infos, sbp.get(SAVE_JOB, {}))
    plan = Plan(tasks=tasks, machines=MachineInfo(machines, devices_per_machine),
                job=JobInfo(",".join(j.name for j in jobs), None, [], [], sorted(variables)),
                ctrl=ctrl, jobs=infos)
    if validate:
        plan.validate()
    return plan


def _one_unit_per_part(tasks: list[Task]) -> None:
    """Every node of one variable part must run on one unit: a process unit holds the
    part's state in its own memory, so two units would each change a copy of their own."""
    units: dict[tuple[int, str], set[int]] = {}
    for t in tasks:
        for e in t.exec_sequence:
            key = e.kernel.attrs.get("state_key")
            if key is not None:
                units.setdefault((t.machine_id, key), set()).add(t.thrd_id)
    for (machine, key), thrds in sorted(units.items()):
        if len(thrds) > 1:
            raise CompileError(f"variable part '{key}' is used on machine {machine} by tasks "
                               f"on units {sorted(thrds)}; the jobs sharing a variable need "
                               "its part on one unit (compile without unit_per_task)")


def _client_io_on_rank0(job: JobSpec) -> JobSpec:
    """Every input and output of the job on rank 0 (machine 0), where the main job and the
    client are: an input placed elsewhere is fed on rank 0 and moved by boxing, so the ops
    reading it keep their placement; outputs are boxed to rank 0."""
    spec = copy.deepcopy(job)
    ops = []
    for op in spec.ops:
        if op.op_type == "input" and op.ranks not in (None, (0,)):
            feed = LogicalOp(f"{op.name}.feed", "input", {}, dict(op.attrs, feed_name=op.name),
                             device_type=op.device_type, ranks=(0,), out=op.out)
            ops.append(feed)
            op = LogicalOp(op.name, "to_global", {"in": feed.name}, {},
                           device_type=op.device_type, ranks=op.ranks, sbp=op.sbp,
                           register_num=op.register_num, out=op.out)
        elif op.op_type == "output":
            op.ranks = (0,)
        ops.append(op)
    spec.ops = ops
    return spec


def _renumber(tasks: list[Task], job_id: int, job: str, task_base: int,
              desc_base: int) -> int:
    """Shift one job's task and regst desc ids past those already taken; tag the job."""
    desc_map: dict[int, int] = {}
    for t in tasks:
        for d in t.produced.values():
            desc_map[d.regst_desc_id] = desc_base + len(desc_map)
    for t in tasks:
        t.task_id += task_base
        t.job_id = job_id
        t.name = f"{job}/{t.label}"
        for d in t.produced.values():
            d.regst_desc_id = desc_map[d.regst_desc_id]
            d.producer_task_id += task_base
            d.consumer_task_ids = [c + task_base for c in d.consumer_task_ids]
        t.consumed = {k: [desc_map[i] for i in ids] for k, ids in t.consumed.items()}
        for node in t.exec_sequence:
            for refs in (node.inputs, node.outputs):
                for arg, ref in refs.items():
                    refs[arg] = type(ref)(desc_map[ref.regst_desc_id], ref.blob)
        if t.task_type in ("input", "source"):
            t.attrs["gated"] = True  # paced by the main job; its gate's EORD ends it
            t.attrs.pop("piece_num", None)
    return desc_base + len(desc_map)
