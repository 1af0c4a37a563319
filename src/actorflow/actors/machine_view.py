"""What one machine needs to know of a (sub-)plan: its tasks, routing and regst descs.

Kept apart from ``node.py`` so that a unit process (``process_unit.py``) reads its machine
without importing the node that spawns it (that import closed a cycle node ->
process_hosting -> process_unit -> node).
"""

from __future__ import annotations

from actorflow.errors import TransportError
from actorflow.plan.model import Plan, RegstDesc


class MachineView:
    """What one machine needs to know of a (sub-)plan, as plain ids and descs."""

    def __init__(self, plan: Plan, machine_id: int) -> None:
        self.plan = plan
        self.machine_id = machine_id
        self.tasks = [t for t in plan.tasks if t.machine_id == machine_id]
        if "routing" in plan.ctrl:
            self.routing = {int(k): (int(v[0]), int(v[1])) for k, v in
                            plan.ctrl["routing"].items()}
        else:
            self.routing = plan.routing_table()
        self.descs: dict[int, RegstDesc] = plan.regst_descs()
        remote = plan.ctrl.get("remote_descs")
        if remote is not None:
            for k, d in remote.items():
                self.descs.setdefault(int(k), RegstDesc.from_dict(d))
        produced_here = {d.regst_desc_id for t in self.tasks for d in t.produced.values()}
        remote_ids = {i for t in self.tasks for i in t.consumed_ids() if i not in produced_here}
        for i in sorted(remote_ids):
            if i not in self.descs:
                raise TransportError(f"machine {machine_id}: regst desc {i} is consumed here "
                                     "but the plan neither produces it nor lists it in "
                                     "ctrl['remote_descs'] (use Plan.for_machine)")
        self.remote_descs = {i: self.descs[i] for i in sorted(remote_ids)}
        self.producer_of = {i: d.producer_task_id for i, d in self.descs.items()}
        self.units = sorted({(t.machine_id, t.thrd_id) for t in self.tasks})
