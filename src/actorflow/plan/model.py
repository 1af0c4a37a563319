"""The Plan: what to run, as plain data.

A Plan never imports runtime code; it can be saved, loaded, validated, shown and
simulated without starting a thread.  Everything here converts to and from plain
dicts (``to_dict``/``from_dict``) so the msgpack and JSON forms are the same tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from actorflow.errors import PlanLoadError
from actorflow.kernels.blob import BlobDesc
from actorflow.plan import fields as f

SCHEMA_VERSION = 1

# A task's ``task_type`` names its kind: one record each in ``actorflow.protocol.kinds``
# (state machine, structural rule, description), checked by ``Plan.validate``.


@dataclass(frozen=True)
class BlobRef:
    """One blob of one regst desc: where an exec node reads or writes."""

    regst_desc_id: int
    blob: str

    def to_list(self) -> list:
        return [self.regst_desc_id, self.blob]

    @classmethod
    def from_list(cls, v: Any, where: str = "blob ref") -> BlobRef:
        items = f.as_list(v, where)
        if len(items) != 2:
            raise PlanLoadError(f"{where}: expected [regst_desc_id, blob name], got "
                                  f"{len(items)} items")
        return cls(f.as_int(items[0], f"{where}[0]"), f.as_str(items[1], f"{where}[1]"))


@dataclass
class RegstDesc:
    regst_desc_id: int
    producer_task_id: int
    consumer_task_ids: list[int]
    register_num: int
    blobs: dict[str, BlobDesc] = field(default_factory=dict)
    mem_case: str = "host"
    is_ctrl: bool = False

    def nbytes(self) -> int:
        return sum(b.nbytes() for b in self.blobs.values())

    def to_dict(self) -> dict:
        return {
            "regst_desc_id": self.regst_desc_id,
            "producer_task_id": self.producer_task_id,
            "consumer_task_ids": list(self.consumer_task_ids),
            "register_num": self.register_num,
            "blobs": {k: v.to_dict() for k, v in self.blobs.items()},
            "mem_case": self.mem_case,
            "is_ctrl": self.is_ctrl,
        }

    @classmethod
    def from_dict(cls, d: Any, where: str = "regst desc") -> RegstDesc:
        d = f.as_map(d, where)
        blobs = {}
        for k, v in f.str_keys(f.get_map(d, "blobs", where), f"{where}.blobs").items():
            bw = f"{where}.blobs[{k!r}]"
            b = f.as_map(v, bw)
            blobs[k] = BlobDesc(tuple(f.int_list(f.get_list(b, "shape", bw, True), f"{bw}.shape")),
                                f.get_str(b, "dtype", bw))
        return cls(
            regst_desc_id=f.get_int(d, "regst_desc_id", where),
            producer_task_id=f.get_int(d, "producer_task_id", where),
            consumer_task_ids=f.int_list(f.get_list(d, "consumer_task_ids", where, True),
                                         f"{where}.consumer_task_ids"),
            register_num=f.get_int(d, "register_num", where),
            blobs=blobs,
            mem_case=f.get_str(d, "mem_case", where, "host"),
            is_ctrl=f.get_bool(d, "is_ctrl", where),
        )


@dataclass
class KernelConf:
    op_name: str
    op_type: str
    attrs: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"op_name": self.op_name, "op_type": self.op_type, "attrs": dict(self.attrs)}

    @classmethod
    def from_dict(cls, d: Any, where: str = "kernel") -> KernelConf:
        d = f.as_map(d, where)
        return cls(f.get_str(d, "op_name", where), f.get_str(d, "op_type", where),
                   f.plain(f.get_map(d, "attrs", where), f"{where}.attrs"))


@dataclass
class ExecNode:
    """One kernel of a task's exec sequence and the blobs it reads and writes.

    ``inputs``/``outputs`` map the op definition's argument names (``in``, ``in_0`` ...,
    ``out``) to blobs; together they are the ``bn_in_op → regst desc`` map of seed 001.
    """

    kernel: KernelConf
    inputs: dict[str, BlobRef] = field(default_factory=dict)
    outputs: dict[str, BlobRef] = field(default_factory=dict)

    @property
    def bn_in_op(self) -> dict[str, int]:
        m = {k: r.regst_desc_id for k, r in self.inputs.items()}
        m.update({k: r.regst_desc_id for k, r in self.outputs.items()})
        return m

    def to_dict(self) -> dict:
        return {
            "kernel": self.kernel.to_dict(),
            "inputs": {k: v.to_list() for k, v in self.inputs.items()},
            "outputs": {k: v.to_list() for k, v in self.outputs.items()},
        }

    @classmethod
    def from_dict(cls, d: Any, where: str = "exec node") -> ExecNode:
        d = f.as_map(d, where)
        if "kernel" not in d:
            raise PlanLoadError(f"{where}: missing field 'kernel'")
        refs = []
        for key in ("inputs", "outputs"):
            m = f.str_keys(f.get_map(d, key, where), f"{where}.{key}")
            refs.append({k: BlobRef.from_list(v, f"{where}.{key}[{k!r}]") for k, v in m.items()})
        return cls(KernelConf.from_dict(d["kernel"], f"{where}.kernel"), refs[0], refs[1])


@dataclass(frozen=True)
class ParallelContext:
    parallel_id: int = 0
    parallel_num: int = 1


@dataclass
class Task:
    task_id: int
    task_type: str
    machine_id: int
    thrd_id: int
    exec_sequence: list[ExecNode] = field(default_factory=list)
    produced: dict[str, RegstDesc] = field(default_factory=dict)
    consumed: dict[str, list[int]] = field(default_factory=dict)
    parallel_ctx: ParallelContext = field(default_factory=ParallelContext)
    attrs: dict[str, Any] = field(default_factory=dict)
    name: str = ""
    job_id: int = 0  # which job of a multi-job plan the task belongs to (plan.jobs)

    @property
    def label(self) -> str:
        return self.name or f"task{self.task_id}"

    def consumed_ids(self) -> list[int]:
        return [i for ids in self.consumed.values() for i in ids]

    def to_dict(self) -> dict:
        return {
            "task_id": self.task_id,
            "task_type": self.task_type,
            "machine_id": self.machine_id,
            "thrd_id": self.thrd_id,
            "name": self.name,
            "exec_sequence": [e.to_dict() for e in self.exec_sequence],
            "produced": {k: v.to_dict() for k, v in self.produced.items()},
            "consumed": {k: list(v) for k, v in self.consumed.items()},
            "parallel_ctx": [self.parallel_ctx.parallel_id, self.parallel_ctx.parallel_num],
            "attrs": dict(self.attrs),
            "job_id": self.job_id,
        }

    @classmethod
    def from_dict(cls, d: Any, where: str = "task") -> Task:
        d = f.as_map(d, where)
        pc = f.int_list(d.get("parallel_ctx", [0, 1]), f"{where}.parallel_ctx", length=2)
        produced = f.str_keys(f.get_map(d, "produced", where), f"{where}.produced")
        consumed = f.str_keys(f.get_map(d, "consumed", where), f"{where}.consumed")
        return cls(
            task_id=f.get_int(d, "task_id", where),
            task_type=f.get_str(d, "task_type", where),
            machine_id=f.get_int(d, "machine_id", where),
            thrd_id=f.get_int(d, "thrd_id", where),
            name=f.get_str(d, "name", where, ""),
            exec_sequence=[ExecNode.from_dict(e, f"{where}.exec_sequence[{i}]")
                           for i, e in enumerate(f.get_list(d, "exec_sequence", where))],
            produced={k: RegstDesc.from_dict(v, f"{where}.produced[{k!r}]")
                      for k, v in produced.items()},
            consumed={k: f.int_list(v, f"{where}.consumed[{k!r}]") for k, v in consumed.items()},
            parallel_ctx=ParallelContext(pc[0], pc[1]),
            attrs=f.plain(f.get_map(d, "attrs", where), f"{where}.attrs"),
            job_id=f.get_int(d, "job_id", where, 0),
        )


@dataclass
class MachineInfo:
    count: int = 1
    devices_per_machine: int = 1

    def to_dict(self) -> dict:
        return {"count": self.count, "devices_per_machine": self.devices_per_machine}

    @classmethod
    def from_dict(cls, d: Any, where: str = "machines") -> MachineInfo:
        d = f.as_map(d, where)
        return cls(f.get_int(d, "count", where, 1), f.get_int(d, "devices_per_machine", where, 1))


@dataclass
class JobInfo:
    name: str = "job"
    num_pieces: int | None = None  # None: until the client closes the inputs
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    variables: list[str] = field(default_factory=list)
    job_id: int = 0
    reads: list[str] = field(default_factory=list)  # variables the job reads (multi-job plans)
    writes: list[str] = field(default_factory=list)  # variables the job assigns

    def to_dict(self) -> dict:
        return {
            "name": self.name, "num_pieces": self.num_pieces, "inputs": list(self.inputs),
            "outputs": list(self.outputs), "variables": list(self.variables),
            "job_id": self.job_id, "reads": list(self.reads), "writes": list(self.writes),
        }

    @classmethod
    def from_dict(cls, d: Any, where: str = "job") -> JobInfo:
        d = f.as_map(d, where)

        def names(k: str) -> list[str]:
            return f.str_list(f.get_list(d, k, where), f"{where}.{k}")

        return cls(f.get_str(d, "name", where, "job"), f.get_opt_int(d, "num_pieces", where),
                   inputs=names("inputs"), outputs=names("outputs"),
                   variables=names("variables"), job_id=f.get_int(d, "job_id", where, 0),
                   reads=names("reads"), writes=names("writes"))


@dataclass
class Plan:
    tasks: list[Task]
    machines: MachineInfo = field(default_factory=MachineInfo)
    job: JobInfo = field(default_factory=JobInfo)
    ctrl: dict[str, Any] = field(default_factory=dict)
    version: int = SCHEMA_VERSION
    # several jobs in one plan (af.compile([...])): one JobInfo per job, by job_id; the
    # last is the main job.  Empty for a single-job plan.
    jobs: list[JobInfo] = field(default_factory=list)

    @property
    def is_multi_job(self) -> bool:
        return bool(self.jobs)

    # -- lookups (plain ids only) -------------------------------------------------
    def task(self, task_id: int) -> Task:
        for t in self.tasks:
            if t.task_id == task_id:
                return t
        raise KeyError(f"plan has no task {task_id}")

    def regst_descs(self) -> dict[int, RegstDesc]:
        return {d.regst_desc_id: d for t in self.tasks for d in t.produced.values()}

    def tasks_by_type(self, task_type: str) -> list[Task]:
        return [t for t in self.tasks if t.task_type == task_type]

    def input_tasks(self) -> dict[str, Task]:
        return {t.attrs.get("input_name", t.label): t for t in self.tasks_by_type("input")}

    def output_tasks(self) -> dict[str, Task]:
        return {t.attrs.get("output_name", t.label): t for t in self.tasks_by_type("output")}

    def routing_table(self) -> dict[int, tuple[int, int]]:
        """task_id -> (machine_id, thrd_id): all a message bus needs to route."""
        return {t.task_id: (t.machine_id, t.thrd_id) for t in self.tasks}

    def for_machine(self, machine_id: int) -> Plan:
        """The sub-plan one machine runs: its own tasks, and in ``ctrl`` the routes and remote
        regst descs it uses (``shares.machine_shares`` cuts every machine's at once)."""
        from actorflow.plan.shares import machine_shares

        return machine_shares(self, [machine_id])[machine_id]

    def validate(self) -> Plan:
        from actorflow.plan.validate import validate_plan

        validate_plan(self)
        return self

    def to_dict(self) -> dict:
        return {
            "version": self.version,
            "machines": self.machines.to_dict(),
            "job": self.job.to_dict(),
            "ctrl": dict(self.ctrl),
            "tasks": [t.to_dict() for t in self.tasks],
            "jobs": [j.to_dict() for j in self.jobs],
        }

    @classmethod
    def from_dict(cls, d: Any) -> Plan:
        """Build a Plan from plain data; a malformed field raises ``PlanLoadError`` naming it."""
        d = f.as_map(d, "plan")
        tasks = f.get_list(d, "tasks", "plan", required=True)
        return cls(
            tasks=[Task.from_dict(t, f"tasks[{i}]") for i, t in enumerate(tasks)],
            machines=MachineInfo.from_dict(d.get("machines", {})),
            job=JobInfo.from_dict(d.get("job", {})),
            ctrl=f.plain(f.get_map(d, "ctrl", "plan"), "ctrl"),
            version=f.get_int(d, "version", "plan", SCHEMA_VERSION),
            jobs=[JobInfo.from_dict(j, f"plan.jobs[{i}]")
                  for i, j in enumerate(f.get_list(d, "jobs", "plan"))],
        )
