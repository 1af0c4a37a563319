"""PlanBuilder: chains, fan-out, fan-in, acc/repeat, register_num, comm_net insertion."""

from __future__ import annotations

import pytest

import actorflow as af
from actorflow.errors import OpError


def test_chain_ids_shapes_and_consumer_lists():
    b = af.PlanBuilder(register_num=3)
    x = b.input("x", (2, 4), "float32")
    h = b.op("transpose", x)
    y = b.op("matmul", x, h, register_num=1)
    b.output("y", y)
    p = b.build()
    assert [t.task_type for t in p.tasks] == ["input", "normal", "normal", "output"]
    assert y.shape == (2, 2) and h.shape == (4, 2)
    d = p.regst_descs()
    assert d[x.regst_desc_id].consumer_task_ids == [1, 2]  # fan-out: one desc, two consumers
    assert d[x.regst_desc_id].register_num == 3 and d[y.regst_desc_id].register_num == 1
    assert p.task(2).consumed == {"a": [x.regst_desc_id], "b": [h.regst_desc_id]}
    assert p.job.inputs == ["x"] and p.job.outputs == ["y"]
    assert [t.thrd_id for t in p.tasks] == [0, 1, 2, 3]  # one thread per task by default


def test_thread_assignment_and_names():
    b = af.PlanBuilder()
    x = b.input("x", (1,), thrd=0)
    y = b.op("relu", x, thrd=0, name="r")
    b.output("y", y, thrd=0)
    p = b.build()
    assert {t.thrd_id for t in p.tasks} == {0}
    assert p.task(1).label == "r"


def test_cross_machine_edges_get_one_comm_net_task_per_receiving_machine():
    b = af.PlanBuilder(machines=3)
    x = b.input("x", (4,))
    y1 = b.op("relu", x, machine=1)
    y2 = b.op("neg", x, machine=1)
    y3 = b.op("add", y1, y2, machine=2)
    b.output("y", y3)
    p = b.build()
    comm = p.tasks_by_type("comm_net")
    assert sorted(t.machine_id for t in comm) == [1, 2, 2]
    into_m1 = [t for t in comm if t.machine_id == 1]
    assert len(into_m1) == 1 and into_m1[0].consumed_ids() == [x.regst_desc_id]
    # both machine-1 ops read the local copy, not the remote desc
    local = next(iter(into_m1[0].produced.values())).regst_desc_id
    assert p.task(y1.task_id).consumed_ids() == [local] == p.task(y2.task_id).consumed_ids()
    assert p.task(p.output_tasks()["y"].task_id).machine_id == 2
    with pytest.raises(ValueError, match="machine 3 is out of range for a 3-machine plan"):
        b.op("relu", x, machine=3)


def test_fused_task_runs_several_kernels_with_a_scratch_desc():
    b = af.PlanBuilder()
    x = b.input("x", (3,))
    y = b.fused([("relu", {}), ("scalar_mul", {"scalar": 2.0}), ("neg", {})], x)
    b.output("y", y)
    t = b.build().task(y.task_id)
    assert [n.kernel.op_type for n in t.exec_sequence] == ["relu", "scalar_mul", "neg"]
    assert t.produced["tmp"].consumer_task_ids == [] and set(t.produced["tmp"].blobs) == {
        "t0", "t1"}


def test_acc_and_repeat_tasks():
    b = af.PlanBuilder()
    x = b.input("x", (3,))
    a = b.acc(x, 4, register_num=1)
    r = b.repeat(a, 4)
    b.output("y", r)
    p = b.build()
    assert p.task(a.task_id).task_type == "acc" and p.task(a.task_id).attrs == {"acc_num": 4}
    assert p.task(r.task_id).attrs == {"repeat_num": 4}
    assert p.regst_descs()[a.regst_desc_id].register_num == 1


def test_source_and_variadic_ops():
    b = af.PlanBuilder()
    s = b.source("arange", {"stop": 3}, piece_num=5)
    c = b.op("concat", s, s, s, axis=0)
    b.output("y", c)
    p = b.build()
    assert p.task(s.task_id).attrs["piece_num"] == 5
    assert c.shape == (9,)
    assert list(p.task(c.task_id).exec_sequence[0].inputs) == ["in_0", "in_1", "in_2"]


def test_builder_rejects_bad_ops_early():
    b = af.PlanBuilder()
    x = b.input("x", (3,))
    with pytest.raises(OpError, match=r"relu takes inputs \['in'\], got 2 positional ports"):
        b.op("relu", x, x)
    with pytest.raises(OpError, match="inner dimensions differ"):
        b.op("matmul", b.op("reshape", x, shape=[3, 1]), b.op("reshape", x, shape=[3, 1]))
