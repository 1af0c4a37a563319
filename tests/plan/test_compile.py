"""The compiler on fixed jobs: every boxing kind, comm_net placement, merging, threads.

Every job is compiled (which validates the plan, dry run included), run with Session, and
compared with numpy.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import actorflow as af
import actorflow.functional as F
from actorflow.errors import CompileError

P2 = af.placement("cpu", ranks=[0, 1])
SHAPE = (6, 4)


def rand(seed: int, piece: int, shape=SHAPE) -> np.ndarray:
    return np.random.default_rng([seed, piece]).standard_normal(shape).astype("float32")


def run(job: af.Job, machines: int, dpm: int = 1, **kw) -> tuple[af.Plan, dict]:
    plan = af.compile(job, machines=machines, devices_per_machine=dpm, **kw)
    with af.Session(plan, timeout=30) as s:
        return plan, s.run_to_end()


def op_counts(plan: af.Plan) -> Counter:
    return Counter(e.kernel.op_type for t in plan.tasks for e in t.exec_sequence)


def boxing_job(src_sbp, dst_sbp, src_place=P2, dst_place=P2, pieces=2, shape=SHAPE):
    with af.Job("boxing", pieces=pieces) as job:
        x = af.random_input("x", shape, seed=1, placement=src_place, sbp=src_sbp)
        y = F.exp(x)  # runs piece-wise in the source layout
        af.output("y", F.relu(y.to_global(dst_place, dst_sbp)))
    return job


@pytest.mark.parametrize("src, dst, expect", [
    (af.sbp.broadcast, af.sbp.split(0), {"box_slice"}),  # B->S: slice locally
    (af.sbp.split(0), af.sbp.broadcast, {"concat"}),  # S->B: gather
    (af.sbp.split(0), af.sbp.split(1), {"box_slice", "concat"}),  # S(i)->S(j): all-to-all
    (af.sbp.split(1), af.sbp.split(0), {"box_slice", "concat"}),
])
def test_boxing_between_split_and_broadcast(src, dst, expect):
    plan, out = run(boxing_job(src, dst), machines=2)
    assert expect <= set(op_counts(plan))
    for i, y in enumerate(out["y"]):
        np.testing.assert_allclose(y, np.maximum(np.exp(rand(1, i)), 0), rtol=1e-6)


def partial_job(dst_sbp, dst_place=P2):
    """x (B) @ w (S0) picks (S1, S0) -> P; then P is boxed to ``dst_sbp``."""
    with af.Job("partial", pieces=2) as job:
        x = af.random_input("x", (4, 6), seed=2, placement=P2, sbp=af.sbp.broadcast)
        w = af.variable("w", (6, 5), init="normal", seed=3, placement=P2, sbp=af.sbp.split(0))
        y = x @ w
        af.output("y", F.tanh(y.to_global(dst_place, dst_sbp)))
    return job


def partial_expected(i: int) -> np.ndarray:
    w = np.random.default_rng(3).standard_normal((6, 5)).astype("float32")
    return np.tanh(rand(2, i, (4, 6)) @ w)


@pytest.mark.parametrize("dst, expect", [
    (af.sbp.broadcast, {"add_n"}),  # P->B: add every partial
    (af.sbp.split(0), {"add_n", "box_slice"}),  # P->S: add the slices
    (af.sbp.split(1), {"add_n", "box_slice"}),
])
def test_boxing_from_partial_sum(dst, expect):
    plan, out = run(partial_job(dst), machines=2)
    assert plan.ctrl["sbp"]["matmul0"].startswith("(a:S1, b:S0) -> P")
    assert expect <= set(op_counts(plan))
    for i, y in enumerate(out["y"]):
        np.testing.assert_allclose(y, partial_expected(i), rtol=1e-5, atol=1e-6)


def test_boxing_across_placements_and_uneven_splits():
    src = af.placement("cpu", ranks=[0, 1, 2])
    dst = af.placement("cpu", ranks=[3, 1])
    job = boxing_job(af.sbp.split(0), af.sbp.split(1), src, dst, shape=(7, 5))
    _, out = run(job, machines=2, dpm=2)
    for i, y in enumerate(out["y"]):
        np.testing.assert_allclose(y, np.exp(rand(1, i, (7, 5))), rtol=1e-6)
    # P on two ranks -> B on a third
    _, out = run(partial_job(af.sbp.broadcast, af.placement("cpu", ranks=[2])), machines=3)
    for i, y in enumerate(out["y"]):
        np.testing.assert_allclose(y, partial_expected(i), rtol=1e-5, atol=1e-6)


def test_comm_net_tasks_sit_on_the_receiving_machine():
    plan, _ = run(boxing_job(af.sbp.split(0), af.sbp.split(1)), machines=2)
    descs = plan.regst_descs()
    producer = {d.regst_desc_id: plan.task(d.producer_task_id) for d in descs.values()}
    comm = plan.tasks_by_type("comm_net")
    assert comm
    for t in comm:
        (src,) = t.consumed_ids()
        assert producer[src].machine_id != t.machine_id
        (out,) = t.produced.values()
        assert all(plan.task(c).machine_id == t.machine_id for c in out.consumer_task_ids)
    for t in plan.tasks:  # no other task reads across machines
        if t.task_type != "comm_net":
            assert all(producer[i].machine_id == t.machine_id for i in t.consumed_ids())


def test_data_parallel_moves_nothing_between_layers():
    with af.Job("dp", pieces=2) as job:
        x = af.random_input("x", (8, 4), seed=4, placement=P2, sbp=af.sbp.split(0))
        w1 = af.variable("w1", (4, 4), init="normal", seed=5, placement=P2)
        w2 = af.variable("w2", (4, 3), init="normal", seed=6, placement=P2)
        af.output("y", F.relu(x @ w1) @ w2)
    plan, out = run(job, machines=2)
    assert plan.ctrl["sbp"]["matmul0"] == "(a:S0, b:B) -> S0 on [m0:d0, m1:d0]"
    assert plan.ctrl["sbp"]["matmul1"] == "(a:S0, b:B) -> S0 on [m0:d0, m1:d0]"
    # only the input half goes to machine 1 and the output half comes back
    assert sorted(t.name.split("->")[1] for t in plan.tasks_by_type("comm_net")) == ["m0", "m1"]
    w1 = np.random.default_rng(5).standard_normal((4, 4)).astype("float32")
    w2 = np.random.default_rng(6).standard_normal((4, 3)).astype("float32")
    for i, y in enumerate(out["y"]):
        np.testing.assert_allclose(y, np.maximum(rand(4, i, (8, 4)) @ w1, 0) @ w2, rtol=1e-5)


def chain_job():
    with af.Job("chain", pieces=3) as job:
        x = af.random_input("x", (5, 3), seed=7)
        y = ((x * 2 + 1).exp() - 3).relu()
        af.output("y", y.softmax(1).sum(dim=0))
    return job


def test_chains_on_one_device_merge_into_one_task():
    plan, out = run(chain_job(), machines=1)
    kinds = Counter(t.task_type for t in plan.tasks)
    assert kinds == Counter({"source": 1, "normal": 1, "output": 1})
    (normal,) = plan.tasks_by_type("normal")
    assert [e.kernel.op_type for e in normal.exec_sequence] == [
        "scalar_mul", "scalar_add", "exp", "scalar_sub", "relu", "softmax", "reduce_sum"]
    unmerged, out2 = run(chain_job(), machines=1, merge=False)
    assert len(unmerged.tasks_by_type("normal")) == 7
    for i, (a, b) in enumerate(zip(out["y"], out2["y"])):
        x = rand(7, i, (5, 3))
        h = np.maximum(np.exp(x * 2 + 1) - 3, 0)
        e = np.exp(h - h.max(axis=1, keepdims=True))
        np.testing.assert_allclose(a, (e / e.sum(axis=1, keepdims=True)).sum(0), rtol=1e-5)
        np.testing.assert_array_equal(a, b)


def test_thread_ids_by_role_and_one_unit_per_task():
    job = boxing_job(af.sbp.split(0), af.sbp.broadcast, af.placement("cpu", ranks=[0, 1, 2, 3]))
    plan, _ = run(job, machines=2, dpm=2)
    for t in plan.tasks:
        if t.task_type == "comm_net":
            assert t.thrd_id == 2
        elif t.task_type in ("source", "output", "input"):
            assert t.thrd_id == 3
        else:
            assert t.thrd_id in (0, 1)
            assert all(d.mem_case == "host" for d in t.produced.values())
    plan, out = run(job, machines=2, dpm=2, unit_per_task=True)
    units = Counter((t.machine_id, t.thrd_id) for t in plan.tasks)
    assert max(units.values()) == 1
    for i, y in enumerate(out["y"]):
        np.testing.assert_allclose(y, np.exp(rand(1, i)), rtol=1e-6)


def test_register_num_from_the_job_and_scratch_descs():
    with af.Job("rn", pieces=2, register_num=4) as job:
        x = af.random_input("x", (4,), seed=1)
        af.output("y", F.exp(F.exp(x)))
    plan = af.compile(job)
    for d in plan.regst_descs().values():
        assert d.register_num == (4 if d.consumer_task_ids else 1)


def test_variables_without_a_local_reader_are_paced_by_a_tick():
    with af.Job("tick", pieces=3) as job:
        x = af.random_input("x", (3,), seed=1, placement=af.placement("cpu", ranks=[1]))
        v = af.variable("v", (3,), init="normal", seed=2)  # on rank 0, read on rank 1
        af.output("y", x + v)
    plan, out = run(job, machines=2)
    (vt,) = [t for t in plan.tasks if any(e.kernel.op_type == "variable_part"
                                          for e in t.exec_sequence)]
    assert "tick" in vt.consumed
    v = np.random.default_rng(2).standard_normal(3).astype("float32")
    for i, y in enumerate(out["y"]):
        np.testing.assert_allclose(y, rand(1, i, (3,)) + v, rtol=1e-6)


def test_compile_errors_are_clear():
    job = boxing_job(af.sbp.split(0), af.sbp.broadcast, af.placement("cpu", ranks=[0, 5]))
    with pytest.raises(CompileError, match=r"op 'x\.global' is placed on rank 5, but the cluster "
                                           r"has 2 ranks \(2 machines x 1 devices\)"):
        af.compile(job, machines=2)
    with pytest.raises(CompileError, match="cannot split axis 0 of shape"):
        af.compile(boxing_job(af.sbp.split(0), af.sbp.broadcast, shape=(1, 4)), machines=2)
    with af.Job("mixed") as mixed:
        a = af.input("a", (2,), placement=af.placement("cuda", ranks=[0]))
        with pytest.raises(CompileError, match=r"mixes device types \['cpu', 'cuda'\]"):
            a + af.input("b", (2,))
    assert mixed.spec.ops
    with pytest.raises(CompileError, match="machines"):
        af.compile(chain_job(), machines=0)


def test_cuda_placements_compile_to_device_memory():
    with af.Job("gpu", pieces=1) as job:
        x = af.random_input("x", (4, 2), seed=1,
                            placement=af.placement("cuda", ranks=[0, 1]), sbp=af.sbp.split(0))
        af.output("y", F.relu(x))
    plan = af.compile(job, machines=1, devices_per_machine=2)
    mems = {d.mem_case for t in plan.tasks_by_type("normal") for d in t.produced.values()}
    assert mems == {"cuda:0", "cuda:1"}
    # host input -> each device, and each device -> host for the output: copy tasks
    descs = plan.regst_descs()
    for t in plan.tasks:
        reads = {descs[i].mem_case for i in t.consumed_ids()}
        writes = {d.mem_case for d in t.produced.values()}
        if t.task_type == "copy_h2d":
            assert reads == {"host"} and writes <= {"cuda:0", "cuda:1"} and len(writes) == 1
        elif t.task_type == "copy_d2h":
            assert reads <= {"cuda:0", "cuda:1"} and writes == {"host"}
        elif t.task_type == "output":
            assert reads == {"host"}
        elif reads:
            assert reads == writes, t.label  # kernels only touch their own memory
    kinds = Counter(t.task_type for t in plan.tasks)
    # input -> d0; d0 -> d1 and d1 -> d0 (through host memory); the gathered output -> host
    assert kinds["copy_h2d"] == 3 and kinds["copy_d2h"] == 3
    assert len({t.thrd_id for t in plan.tasks if t.task_type.startswith("copy")}) == 4
