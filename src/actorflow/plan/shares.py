"""Per-machine shares of a plan: what rank 0 sends each machine.

A machine needs its own tasks, the routes of the tasks it talks to (its own, the remote
consumers of the regsts it produces, the remote producers of the regsts it consumes) and
the descs of those remote regsts (for receive buffers).  Nothing else: so a share grows
with the machine's tasks and its neighbours, never with the size of the cluster, and all
shares of a plan are cut in one pass over it (O(tasks + edges), not O(machines x tasks)).
"""

from __future__ import annotations

from actorflow.plan.model import Plan, RegstDesc, Task


def machine_shares(plan: Plan, machines: list[int] | None = None) -> dict[int, Plan]:
    """``{machine_id: sub-plan}`` for ``machines`` (default: every machine of the plan)."""
    wanted = set(range(plan.machines.count)) if machines is None else set(machines)
    mine: dict[int, list[Task]] = {m: [] for m in wanted}
    where: dict[int, tuple[int, int]] = {}
    descs: dict[int, RegstDesc] = {}
    for t in plan.tasks:
        where[t.task_id] = (t.machine_id, t.thrd_id)
        if t.machine_id in mine:
            mine[t.machine_id].append(t)
        for d in t.produced.values():
            descs[d.regst_desc_id] = d
    shares = {}
    for m, tasks in mine.items():
        routing: dict[str, list[int]] = {}
        remote: dict[str, dict] = {}
        for t in tasks:
            routing[str(t.task_id)] = list(where[t.task_id])
            for out in t.produced.values():
                for c in out.consumer_task_ids:  # READY and EORD go there
                    if c in where:
                        routing[str(c)] = list(where[c])
            for ids in t.consumed.values():
                for i in ids:
                    src = descs.get(i)
                    if src is None:
                        continue  # a dangling id: validation names it
                    p = src.producer_task_id
                    if p in where and where[p][0] != m:  # ACKs go back there
                        routing[str(p)] = list(where[p])
                        remote[str(i)] = src.to_dict()
        ctrl = dict(plan.ctrl)
        ctrl["routing"] = routing
        ctrl["remote_descs"] = remote
        shares[m] = Plan(tasks, plan.machines, plan.job, ctrl, plan.version, plan.jobs)
    return shares


def peer_machines(share: Plan, machine_id: int) -> list[int]:
    """The other machines a share sends to (the data-plane addresses it needs)."""
    routing = share.ctrl.get("routing", {})
    return sorted({int(v[0]) for v in routing.values()} - {machine_id})


__all__ = ["machine_shares", "peer_machines"]
