"""Model-IO jobs: how a session saves and loads every variable of a multi-job plan.

``__save__`` reads each variable and pulls it to the client (an output named after it);
``__load__`` pushes each variable's logical value in (an input named after it), boxes it to
the variable's placement and SBP, and assigns it.  Both are ordinary jobs of the merged
plan, so the main job's lock keeps them apart from jobs updating or reading the variables.
Loading re-shards by construction: the client feeds the logical value, boxing cuts it.
"""

from __future__ import annotations

import copy

from actorflow.errors import CompileError
from actorflow.plan.compiler.graph import JobSpec, LogicalOp

SAVE_JOB, LOAD_JOB = "__save__", "__load__"


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
    return sorted({names[o.inputs["ref"]].name for o in job.ops if o.op_type == "assign"})


def reads_of(job: JobSpec) -> list[str]:
    return sorted(o.name for o in job.ops if o.op_type == "variable_part")


def model_io_jobs(variables: dict[str, LogicalOp], register_num: int = 2) -> list[JobSpec]:
    """The ``__save__`` and ``__load__`` jobs for ``variables`` (none if there are none)."""
    if not variables:
        return []
    save = JobSpec(SAVE_JOB, register_num=register_num)
    load = JobSpec(LOAD_JOB, register_num=register_num)
    for name, var in sorted(variables.items()):
        save.ops.append(copy.deepcopy(var))
        save.ops.append(LogicalOp(f"{name}.save", "output", {"in": name}, {"name": name}))
        first = (var.ranks or (0,))[:1]
        shape, dtype = var.attrs["logical_shape"], var.attrs["dtype"]
        load.ops.append(LogicalOp(f"{name}.value", "input", {}, {"shape": list(shape),
                                                               "dtype": dtype},
                                  device_type=var.device_type, ranks=first))
        load.ops.append(LogicalOp(f"{name}.global", "to_global", {"in": f"{name}.value"},
                                  device_type=var.device_type, ranks=var.ranks, sbp=var.sbp))
        load.ops.append(copy.deepcopy(var))
        load.ops.append(LogicalOp(f"{name}.assign", "assign",
                                  {"ref": name, "value": f"{name}.global"},
                                  device_type=var.device_type, ranks=var.ranks, sbp=var.sbp))
    return [save, load]
