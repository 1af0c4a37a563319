"""The Plan: what to run, as plain data.

A Plan never imports runtime code; it can be saved, loaded, validated, shown and
simulated without starting a thread.  Everything here converts to and from plain
dicts (``to_dict``/``from_dict``) so the msgpack and JSON forms are the same tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from actorflow.kernels.blob import BlobDesc

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
    def from_list(cls, v: list) -> BlobRef:
        return cls(int(v[0]), str(v[1]))


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
    def from_dict(cls, d: dict) -> RegstDesc:
        return cls(
            regst_desc_id=int(d["regst_desc_id"]),
            producer_task_id=int(d["producer_task_id"]),
            consumer_task_ids=[int(x) for x in d["consumer_task_ids"]],
            register_num=int(d["register_num"]),
            blobs={k: BlobDesc.from_dict(v) for k, v in d.get("blobs", {}).items()},
            mem_case=str(d.get("mem_case", "host")),
            is_ctrl=bool(d.get("is_ctrl", False)),
        )


@dataclass
class KernelConf:
    op_name: str
    op_type: str
    attrs: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"op_name": self.op_name, "op_type": self.op_type, "attrs": dict(self.attrs)}

    @classmethod
    def from_dict(cls, d: dict) -> KernelConf:
        return cls(str(d["op_name"]), str(d["op_type"]), dict(d.get("attrs", {})))


@dataclass
class ExecNode:
    """One kernel of a task's exec sequence and the blobs it reads and writes.

    ``inputs``/``outputs`` map the op definition's argument names (``in``, ``in_0`` ...,
    ``out``) to blobs; together they are the ``bn_in_op → regst desc`` map of DESIGN.md.
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
    def from_dict(cls, d: dict) -> ExecNode:
        return cls(
            KernelConf.from_dict(d["kernel"]),
            {k: BlobRef.from_list(v) for k, v in d.get("inputs", {}).items()},
            {k: BlobRef.from_list(v) for k, v in d.get("outputs", {}).items()},
        )


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
    def from_dict(cls, d: dict) -> Task:
        pc = d.get("parallel_ctx", [0, 1])
        return cls(
            task_id=int(d["task_id"]),
            task_type=str(d["task_type"]),
            machine_id=int(d["machine_id"]),
            thrd_id=int(d["thrd_id"]),
            name=str(d.get("name", "")),
            exec_sequence=[ExecNode.from_dict(e) for e in d.get("exec_sequence", [])],
            produced={k: RegstDesc.from_dict(v) for k, v in d.get("produced", {}).items()},
            consumed={k: [int(x) for x in v] for k, v in d.get("consumed", {}).items()},
            parallel_ctx=ParallelContext(int(pc[0]), int(pc[1])),
            attrs=dict(d.get("attrs", {})),
            job_id=int(d.get("job_id", 0)),
        )


@dataclass
class MachineInfo:
    count: int = 1
    devices_per_machine: int = 1

    def to_dict(self) -> dict:
        return {"count": self.count, "devices_per_machine": self.devices_per_machine}

    @classmethod
    def from_dict(cls, d: dict) -> MachineInfo:
        return cls(int(d.get("count", 1)), int(d.get("devices_per_machine", 1)))


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
    def from_dict(cls, d: dict) -> JobInfo:
        n = d.get("num_pieces")
        return cls(
            str(d.get("name", "job")), None if n is None else int(n),
            list(d.get("inputs", [])), list(d.get("outputs", [])), list(d.get("variables", [])),
            int(d.get("job_id", 0)), list(d.get("reads", [])), list(d.get("writes", [])),
        )


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
    def from_dict(cls, d: dict) -> Plan:
        return cls(
            tasks=[Task.from_dict(t) for t in d["tasks"]],
            machines=MachineInfo.from_dict(d.get("machines", {})),
            job=JobInfo.from_dict(d.get("job", {})),
            ctrl=dict(d.get("ctrl", {})),
            version=int(d.get("version", SCHEMA_VERSION)),
            jobs=[JobInfo.from_dict(j) for j in d.get("jobs", [])],
        )
