"""Model-IO jobs: how a session saves and loads every variable of a multi-job plan.

``__save__`` has every device write its own part of every variable; ``__load__`` has every
device read its own region back from whichever saved parts overlap it (so a checkpoint
saved on 4 machines loads on 2, 1 or 3).  The checkpoint directory is the jobs' one input.
Both are ordinary jobs of the merged plan, so the main job's lock keeps them apart from
jobs updating (and, for ``__load__``, reading) the variables.
"""

from __future__ import annotations

import copy
from typing import Any

from actorflow.errors import CompileError
from actorflow.kernels.checkpoint import PATH_BYTES
from actorflow.plan.compiler.graph import JobSpec, LogicalOp
from actorflow.plan.model import JobInfo, Task

SAVE_JOB, LOAD_JOB = "__save__", "__load__"
PATH_INPUT = "__path__"


def variable_declarations(jobs: list[JobSpec]) -> dict[str, LogicalOp]:
    """Every variable named by the jobs; the same name must be declared the same way."""
    decl: dict[str, tuple[str, LogicalOp]] = {}
    for job in jobs:
        for op in job.ops:
            if op.op_type != "variable_part":
                continue
            prev = decl.get(op.name)
            if prev is None:
                decl[op.name] = (job.name, op)
                continue
            a, b = _signature(prev[1]), _signature(op)
            if a != b:
                diff = sorted(k for k in a if a[k] != b[k])
                raise CompileError(
                    f"variable '{op.name}' is declared differently by job '{prev[0]}' and job "
                    f"'{job.name}' ({', '.join(f'{k}: {a[k]} vs {b[k]}' for k in diff)}); jobs "
                    "share one copy of a variable, so declare it identically")
    return {name: op for name, (_job, op) in decl.items()}


def _signature(op: LogicalOp) -> dict[str, object]:
    a = op.attrs
    return {"shape": tuple(a["logical_shape"]), "dtype": a["dtype"], "init": a["init"],
            "seed": a.get("seed"), "std": a.get("std"), "path": a.get("path"),
            "placement": (op.device_type, op.ranks), "sbp": op.sbp}


def writes_of(job: JobSpec) -> list[str]:
    names = {o.name: o for o in job.ops}
    return sorted({names[o.inputs["ref"]].name for o in job.ops
                   if o.op_type in ("assign", "variable_load")})


def reads_of(job: JobSpec) -> list[str]:
    return sorted(o.name for o in job.ops if o.op_type == "variable_part")


def model_io_jobs(variables: dict[str, LogicalOp], register_num: int = 2) -> list[JobSpec]:
    """The ``__save__`` and ``__load__`` jobs for ``variables`` (none if there are none).

    Both take the checkpoint directory as input ``__path__`` (``uint8[PATH_BYTES]``, on
    rank 0, broadcast to every device holding a part); each device then writes or reads its
    own part (``kernels/ops/model_io.py``)."""
    if not variables:
        return []
    jobs = []
    for job_name, op_type in ((SAVE_JOB, "variable_save"), (LOAD_JOB, "variable_load")):
        spec = JobSpec(job_name, register_num=register_num)
        spec.ops.append(LogicalOp(PATH_INPUT, "input", {}, {"shape": [PATH_BYTES],
                                                           "dtype": "uint8"}, ranks=(0,)))
        for name, var in sorted(variables.items()):
            spec.ops.append(copy.deepcopy(var))
            spec.ops.append(LogicalOp(f"{name}.{op_type}", op_type,
                                      {"ref": name, "path": PATH_INPUT}, {"name": name},
                                      device_type=var.device_type, ranks=var.ranks,
                                      sbp=var.sbp))
        jobs.append(spec)
    return jobs


def checkpoint_layout(tasks: list[Task], jobs: list[JobInfo],
                      sbp: dict[str, str]) -> dict[str, dict[str, Any]]:
    """The manifest of a checkpoint the ``__save__`` job writes: per variable its logical
    shape, dtype, SBP, placement and parts (file, region, machine)."""
    save = next(j.job_id for j in jobs if j.name == SAVE_JOB)
    out: dict[str, dict[str, Any]] = {}
    for t in tasks:
        if t.job_id != save:
            continue
        for e in t.exec_sequence:
            if e.kernel.op_type != "variable_save":
                continue
            a, part = e.kernel.attrs, e.kernel.attrs["variable"]
            code, _, where = sbp.get(a["name"], "").partition(" on ")
            v = out.setdefault(a["name"], {
                "shape": list(part["logical_shape"]), "dtype": part["dtype"], "sbp": code,
                "placement": where, "parts": []})
            if not a.get("skip"):
                v["parts"].append({"file": a["file"], "begin": list(part["begin"]),
                                   "end": list(part["end"]), "machine": t.machine_id})
    for v in out.values():
        v["parts"].sort(key=lambda p: p["begin"])
    return out
