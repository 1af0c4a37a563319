"""Plans for people: a text listing (``flowlaunch plan show``) and Graphviz DOT (``plan dot``).

Reads plain plan data only.  The listing groups tasks by machine and thread and gives every
regst desc its register_num, blobs and bytes per piece; the DOT graph draws machines as
clusters and labels each edge with its regst desc.
"""

from __future__ import annotations

from collections import defaultdict

from actorflow.plan.memory import bytes_per_machine, fmt_bytes
from actorflow.plan.model import Plan, RegstDesc, Task
from actorflow.protocol.kinds import KINDS


def _shape(task_type: str) -> str:
    return KINDS.get(task_type).shape if task_type in KINDS else "box"


def _blobs(d: RegstDesc) -> str:
    return ", ".join(f"{k}:{tuple(b.shape)} {b.dtype}" for k, b in d.blobs.items()) or "ctrl"


def _ops(t: Task) -> str:
    return ", ".join(e.kernel.op_type for e in t.exec_sequence) or "-"


def _thread_role(tasks: list[Task]) -> str:
    return "/".join(sorted({t.task_type for t in tasks}))


def comm_bytes(plan: Plan) -> int:
    """Bytes per piece that cross machines (what comm_net tasks receive)."""
    descs = plan.regst_descs()
    return sum(descs[i].nbytes() for t in plan.tasks_by_type("comm_net")
               for i in t.consumed_ids() if i in descs)


def show(plan: Plan) -> str:
    j, m = plan.job, plan.machines
    pieces = "until closed" if j.num_pieces is None else f"{j.num_pieces} pieces"
    lines = [f"plan '{j.name}': {len(plan.tasks)} tasks on {m.count} machines x "
             f"{m.devices_per_machine} devices, {pieces}",
             f"inputs {j.inputs}  outputs {j.outputs}  variables {j.variables}"]
    total = ndesc = 0
    if plan.is_multi_job:  # several jobs: one listing per job, then the main job drawn
        from actorflow.plan.describe_jobs import draw_main_job, job_header

        for info in plan.jobs:
            tasks = [t for t in plan.tasks if t.job_id == info.job_id]
            lines.append(job_header(plan, info, tasks))
            nb, nd = _listing(tasks, lines, "  ")
            total, ndesc = total + nb, ndesc + nd
        lines.extend(draw_main_job(plan))
    else:
        total, ndesc = _listing(plan.tasks, lines, "")
    lines.append(f"total: {ndesc} regst descs, {total} B written per piece, "
                 f"{comm_bytes(plan)} B per piece cross machines")
    lines.append("task types:")
    for name in sorted({t.task_type for t in plan.tasks}):
        what = KINDS.get(name).description if name in KINDS else "(unknown task type)"
        lines.append(f"  {name}: {what}")
    need = bytes_per_machine(plan)
    lines.append("regst memory (register_num x blob bytes, receive mirrors included): "
                 + ", ".join(f"machine {m} {fmt_bytes(n)}" for m, n in sorted(need.items()))
                 + f"; all machines {fmt_bytes(sum(need.values()))}")
    sbp = plan.ctrl.get("sbp")
    if sbp:
        lines.append("sbp signatures:")
        lines.extend(f"  {op}: {choice}" for op, choice in sbp.items())
    trees = plan.ctrl.get("trees")
    if trees:
        lines.append("fan-in/fan-out trees (no task reads or feeds more than the width):")
        lines.extend(f"  {what}: {how}" for what, how in trees.items())
    return "\n".join(lines)


def _listing(tasks: list[Task], lines: list[str], pad: str) -> tuple[int, int]:
    """Tasks by machine and thread with their regst descs; returns (bytes, descs)."""
    by_unit: dict[int, dict[int, list[Task]]] = defaultdict(lambda: defaultdict(list))
    for t in tasks:
        by_unit[t.machine_id][t.thrd_id].append(t)
    total = ndesc = 0
    for mid in sorted(by_unit):
        lines.append(f"{pad}machine {mid}")
        for thrd in sorted(by_unit[mid]):
            unit = by_unit[mid][thrd]
            lines.append(f"{pad}  thread {thrd} ({_thread_role(unit)}, {len(unit)} tasks)")
            for t in unit:
                cons = t.consumed_ids()
                lines.append(f"{pad}    task {t.task_id} {t.task_type} '{t.label}' ops: "
                             f"{_ops(t)}" + (f"  reads {cons}" if cons else ""))
                for d in t.produced.values():
                    nb = d.nbytes()
                    total += nb
                    ndesc += 1
                    to = f"-> tasks {d.consumer_task_ids}" if d.consumer_task_ids else "(scratch)"
                    lines.append(f"{pad}      regst {d.regst_desc_id} register_num "
                                 f"{d.register_num} {_blobs(d)}  {nb} B/piece {to}")
    return total, ndesc


def _q(s: str) -> str:
    """A DOT string literal; real newlines become DOT's ``\\n`` line breaks."""
    s = s.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + s.replace("\n", "\\n") + '"'


def to_dot(plan: Plan) -> str:
    """Graphviz DOT of the task graph: one cluster per machine, one edge per consumer."""
    out = [f"digraph {_q(plan.job.name)} {{", "  rankdir=LR;",
           '  node [fontname="Helvetica", fontsize=10, style=filled, fillcolor="#f4f4f4"];',
           '  edge [fontname="Helvetica", fontsize=9];']
    by_machine: dict[int, list[Task]] = defaultdict(list)
    for t in plan.tasks:
        by_machine[t.machine_id].append(t)
    for mid in sorted(by_machine):
        out.append(f"  subgraph cluster_m{mid} {{")
        out.append(f'    label="machine {mid}"; style=rounded; color="#7a7a7a";')
        for t in by_machine[mid]:
            label = f"{t.task_id}: {t.label}\n{t.task_type} (thrd {t.thrd_id})\n{_ops(t)}"
            shape = _shape(t.task_type)
            out.append(f"    t{t.task_id} [label={_q(label)}, shape={shape}];")
        out.append("  }")
    for t in plan.tasks:
        for d in t.produced.values():
            for c in d.consumer_task_ids:
                label = f"r{d.regst_desc_id} x{d.register_num} {d.nbytes()}B"
                out.append(f"  t{t.task_id} -> t{c} [label={_q(label)}];")
    out.append("}")
    return "\n".join(out) + "\n"
