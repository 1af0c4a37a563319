"""How an edge between machines is wired: one ``comm_net`` task on the receiving machine.

The compiler (``compiler/emit.py``) and ``PlanBuilder`` both cross machines this way, so
the shape ``Plan.validate`` checks for a comm_net task (``protocol.rules.comm_net``) is
written once: it consumes the remote regst desc and produces a local copy with the same
blobs and ``register_num``, in host memory (the network reads and writes host memory).
"""

from __future__ import annotations

from actorflow.plan.model import RegstDesc, Task


def comm_net_name(src: RegstDesc, machine: int) -> str:
    return f"comm_net{src.regst_desc_id}->m{machine}"


def wire_comm_net(task: Task, src: RegstDesc, out_desc_id: int) -> RegstDesc:
    """Make ``task`` (a new comm_net task) read ``src`` and produce its local copy, regst
    desc ``out_desc_id``; returns the copy."""
    task.consumed["in"] = [src.regst_desc_id]
    src.consumer_task_ids.append(task.task_id)
    out = RegstDesc(out_desc_id, task.task_id, [], src.register_num, dict(src.blobs),
                    is_ctrl=src.is_ctrl)  # a control regst's copy paces like it
    task.produced["out"] = out
    return out
