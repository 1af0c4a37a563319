"""The layouts bench/transport.py measures, checked for numbers (not timed)."""

from __future__ import annotations

import numpy as np

import actorflow as af
from actorflow.session import ClusterSession


def _plan(comm_with_consumer: bool) -> af.Plan:
    b = af.PlanBuilder(machines=2, register_num=2, name="stamp-chain")
    x = b.source("stamp", {"shape": [3, 4], "dtype": "int32"}, piece_num=5, name="src")
    y = b.op("identity", x, machine=1, name="stage")
    b.output("y", y, machine=1)
    plan = b.build()
    if comm_with_consumer:  # what the bench's tcp hop does: comm_net in its reader's unit
        tasks = {t.task_id: t for t in plan.tasks}
        for t in plan.tasks:
            if t.task_type == "comm_net":
                t.thrd_id = tasks[next(iter(t.produced.values())).consumer_task_ids[0]].thrd_id
        plan.validate()
    return plan


def test_stamp_source_crosses_machines_with_comm_net_beside_its_consumer():
    for together in (False, True):
        with ClusterSession(_plan(together), unit="process", scheme="tcp") as s:
            got = s.run_to_end()["y"]
        want = [np.zeros((3, 4), np.int32) for _ in range(5)]
        for i, w in enumerate(want):
            w[0, 0] = i  # stamp writes the piece id into element 0 and nothing else
        assert len(got) == 5
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
