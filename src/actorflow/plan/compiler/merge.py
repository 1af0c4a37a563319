"""Merge chains of physical nodes on one device into one task (fewer actors, fewer hops).

A node joins the task of its producers when all of its inputs come from that one task,
on the same device, and both are kernel tasks.  Nodes with no inputs (variables,
constants) join the task of their first consumer when it is on their device.  This never
makes a cycle: every member but the first of a task reads only from inside the task, so
the only way into a task is through its first node.
"""

from __future__ import annotations

from actorflow.plan.compiler.lower import PNode

KERNEL_KINDS = ("normal", "boxing")


def group_nodes(nodes: list[PNode], merge: bool = True) -> list[list[int]]:
    """Lists of node ids, one list per task, each list in execution (topological) order."""
    group_of: dict[int, int] = {}
    groups: list[list[int]] = []

    def new_group(nid: int) -> int:
        groups.append([nid])
        group_of[nid] = len(groups) - 1
        return group_of[nid]

    for n in nodes:
        if n.kind in KERNEL_KINDS and not n.inputs:
            continue  # placed with its first consumer, below
        srcs = set(n.inputs.values())
        waiting = [s for s in srcs if s not in group_of]
        owners = {group_of[s] for s in srcs if s in group_of}
        target = None
        if merge and n.kind in KERNEL_KINDS and len(owners) <= 1:
            if owners:
                g = owners.pop()
                head = nodes[groups[g][0]]
                if head.kind in KERNEL_KINDS and head.device == n.device:
                    target = g
            elif waiting and all(nodes[s].device == n.device for s in waiting):
                target = None  # a new task that starts with those inputs
        if target is None:
            g = new_group(n.id)
        else:
            groups[target].append(n.id)
            group_of[n.id] = g = target
        for s in waiting:
            if merge and n.kind in KERNEL_KINDS and nodes[s].device == n.device:
                groups[g].append(s)
                group_of[s] = g
            else:
                new_group(s)
    for n in nodes:
        if n.id not in group_of:  # a constant nobody reads
            new_group(n.id)
    for group in groups:
        group.sort()
    return groups
