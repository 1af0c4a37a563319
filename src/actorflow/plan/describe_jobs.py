"""``plan show`` for multi-job plans: a header per job and the main job drawn as text."""

from __future__ import annotations

from actorflow.plan.model import JobInfo, Plan, Task


def job_header(plan: Plan, info: JobInfo, tasks: list[Task]) -> str:
    machines = sorted({t.machine_id for t in tasks})
    if info.job_id == len(plan.jobs) - 1:
        return f"main job (job {info.job_id}): {len(tasks)} tasks on machines {machines}"
    lock = plan.tasks_by_type("reentrant_lock")
    conflicts = lock[0].attrs.get("conflicts", {}).get(str(info.job_id), []) if lock else []
    names = [plan.jobs[i].name for i in conflicts]
    return (f"job {info.job_id} '{info.name}': {len(tasks)} tasks on machines {machines}; "
            f"inputs {info.inputs} outputs {info.outputs} reads {info.reads} "
            f"writes {info.writes}; conflicts with {names}")


def draw_main_job(plan: Plan) -> list[str]:
    """The main job's shape, one line per critical section (seed 001's MainJob)."""
    m = plan.machines.count
    lines = ["main job:",
             "  client ids -> wait_and_send_ids -> reentrant_lock -> case",
             "  esac -> back edge -> reentrant_lock"]
    for info in plan.jobs[:-1]:
        cs = info.job_id
        gates = [t for t in plan.tasks if t.job_id == cs and any(
            k == "gate" for k in t.consumed)]
        lines.append(
            f"  case --cs {cs} '{info.name}'--> source tick -> identity tick x{m} machines "
            f"-> {len(gates)} first tasks ... last tasks -> sink tick x{m} -> "
            f"callback tick x{m} (client) + esac")
    return lines
