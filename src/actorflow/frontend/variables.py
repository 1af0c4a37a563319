"""Read a variable's value from the actors of an in-process Session after (or during) a run.

A variable lives in the kernel state of its ``variable_part`` exec nodes, one part per
device of its placement.  ``read_variable`` finds those nodes in the plan, takes each
part from its actor's kernel state, and assembles the logical value.  It needs the actors
in this process (``af.Session``); for ``flowlaunch`` runs, give the variable to
``af.output`` instead.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from actorflow.errors import UsageError


def _parts(plan: Any, name: str) -> list[tuple[int, str, dict]]:
    return [(t.task_id, e.kernel.op_name, e.kernel.attrs) for t in plan.tasks
            for e in t.exec_sequence if e.kernel.op_type == "variable_part"
            and (e.kernel.op_name == name or e.kernel.op_name.startswith(f"{name}@"))]


def read_variable(session: Any, name: str) -> np.ndarray:
    """The current value of variable ``name`` held by the actors of ``session``."""
    parts = _parts(session.plan, name)
    if not parts:
        raise UsageError(f"the plan has no variable '{name}' (variables: "
                         f"{session.plan.job.variables})")
    hosts = {tid: h for u in session.runtime.units.values() for tid, h in u.actors.items()}
    attrs = parts[0][2]
    value = np.zeros(tuple(attrs["logical_shape"]), dtype=attrs.get("dtype", "float32"))
    for task_id, op_name, a in parts:
        host = hosts.get(task_id)
        states = [ctx.state for _k, ctx, *_ in (host.nodes if host else ())
                  if ctx.op_name == op_name]
        part = states[0].get("value") if states else None
        if part is None:
            raise UsageError(f"variable '{name}': part '{op_name}' (task {task_id}) has no value "
                             "yet; run at least one piece first")
        region = tuple(slice(int(b), int(e)) for b, e in zip(a["begin"], a["end"]))
        value[region] = np.asarray(part.get() if hasattr(part, "get") else part)
    return value
