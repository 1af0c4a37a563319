"""Compiling at cluster scale: bounded fan-in/fan-out, small per-machine shares, same numbers.

The job is the data-parallel layer of issue 14: ``random_input`` split by rows over every
rank -> ``x @ w`` with ``w`` broadcast -> ``relu`` -> ``output``.  Its input is made on one
device and scattered to every rank; its output is gathered from every rank to one device.
Without trees the source task had one consumer per rank and the gather one input per rank.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import actorflow as af
import actorflow.functional as F
from actorflow.plan.describe import show
from actorflow.plan.io import plan_to_bytes
from actorflow.plan.shares import machine_shares

DPM = 8
WIDTH = 16  # the compiler's default fan width


def layer(machines: int, dpm: int = DPM, rows: int = 4) -> af.Job:
    n = machines * dpm
    ranks = af.placement("cpu", ranks=list(range(n)))
    with af.Job(f"layer{n}", pieces=2) as job:
        x = af.random_input("x", (n * rows, 16), seed=1, placement=ranks, sbp=af.sbp.split(0))
        w = af.variable("w", (16, 16), init="normal", seed=2, placement=ranks)
        af.output("y", F.relu(x @ w))
    return job


def cross_machine_messages(plan: af.Plan) -> Counter:
    """Per machine: READYs and ACKs it receives from other machines for one piece."""
    where = {t.task_id: t.machine_id for t in plan.tasks}
    descs = plan.regst_descs()
    got: Counter = Counter()
    for t in plan.tasks:
        for i in t.consumed_ids():
            producer = where[descs[i].producer_task_id]
            if producer != t.machine_id:
                got[t.machine_id] += 1  # the READY of every piece
                got[producer] += 1  # and its ACK
    return got


@pytest.fixture(scope="module")
def plans() -> dict[int, af.Plan]:
    """The layer compiled (and validated, dry run included) on 100 and 1,000 machines x 8."""
    return {m: af.compile(layer(m), machines=m, devices_per_machine=DPM) for m in (100, 1000)}


@pytest.mark.slow
def test_no_task_of_a_1000x8_compile_has_more_than_the_tree_width_of_inputs(plans):
    plan = plans[1000]
    assert plan.machines.count == 1000
    inputs = max(len(t.consumed_ids()) for t in plan.tasks)
    consumers = max(len(d.consumer_task_ids) for t in plan.tasks for d in t.produced.values())
    assert inputs <= WIDTH and consumers <= WIDTH
    # no machine hears from thousands of others per piece: the busiest one (the root of
    # both trees) gets a few READY/ACKs per level of the trees
    busiest = max(cross_machine_messages(plan).values())
    assert busiest <= 6 * WIDTH
    # the trees are visible in `flowlaunch plan show`
    trees = plan.ctrl["trees"]
    assert "8000 pieces -> 1000 + 63 + 4 + 1 concat nodes in 4 levels" in trees["relu0 S0->B"]
    assert "to 8000 pieces" in trees["x B->S0"]
    text = show(plan)
    assert "fan-in/fan-out trees" in text and "relu0 S0->B: tree of width 16" in text


@pytest.mark.slow
def test_machine_shares_grow_with_the_machines_tasks_not_with_the_cluster(plans):
    small, big = plans[100], plans[1000]
    assert len(big.tasks) > 9 * len(small.tasks)
    share_bytes = {}
    for m_count, plan in ((100, small), (1000, big)):
        shares = machine_shares(plan)
        assert sum(len(s.tasks) for s in shares.values()) == len(plan.tasks)
        sizes = {m: len(plan_to_bytes(s)) for m, s in shares.items()}
        for m, s in shares.items():
            own = len(s.tasks)
            # routes: its own tasks and the few tasks they talk to, never the whole plan
            assert own <= len(s.ctrl["routing"]) <= 3 * own
            assert sizes[m] <= 2000 * own  # bytes per own task stay about the same
        share_bytes[m_count] = sizes
        # a machine at the edge of every tree holds the same share on any cluster size
    assert share_bytes[1000][999] == pytest.approx(share_bytes[100][99], rel=0.1)
    # the biggest share (the trees' root) grows with its tasks (a level per 16x), not 10x
    assert max(share_bytes[1000].values()) < 2 * max(share_bytes[100].values())
    assert max(share_bytes[1000].values()) < len(plan_to_bytes(big)) / 200
    # the one-machine form used by the master agrees with the all-at-once cut
    one = big.for_machine(999)
    assert one.ctrl["routing"] == machine_shares(big)[999].ctrl["routing"]


@pytest.mark.parametrize("machines,dpm,width", [(3, 2, 2), (4, 3, 3), (2, 4, 2)])
def test_trees_give_the_same_numbers_as_numpy(machines, dpm, width):
    """Scatter, all-to-all and gather through trees of a tiny width, run by Session."""
    n = machines * dpm
    rows, cols = 2 * n + 1, n + 3  # uneven splits on both axes
    ranks = af.placement("cpu", ranks=list(range(n)))
    with af.Job("trees", pieces=2) as job:
        x = af.random_input("x", (rows, 6), seed=1, placement=ranks, sbp=af.sbp.split(0))
        w = af.variable("w", (6, cols), init="normal", seed=2, placement=ranks)
        h = F.relu(x @ w).to_global(ranks, af.sbp.split(1))  # S0 -> S1 through the root
        h = F.tanh(h).to_global(ranks, af.sbp.broadcast)  # S1 -> B: gather, then relay
        af.output("y", h)
    plan = af.compile(job, machines=machines, devices_per_machine=dpm, fan_width=width)
    assert max(len(t.consumed_ids()) for t in plan.tasks) <= width
    assert set(plan.ctrl["trees"]) == {"x B->S0", "relu0 S0->S1", "tanh0 S1->B"}
    with af.Session(plan, timeout=60) as s:
        out = s.run_to_end()["y"]
    wv = np.random.default_rng(2).standard_normal((6, cols)).astype("float32")
    for piece, got in enumerate(out):
        xv = np.random.default_rng([1, piece]).standard_normal((rows, 6)).astype("float32")
        np.testing.assert_allclose(got, np.tanh(np.maximum(xv @ wv, 0)), rtol=1e-5, atol=1e-6)


def test_a_broadcast_to_many_machines_is_relayed_by_comm_net_trees():
    """A tensor made on one device and read on 12 machines: width 3 -> 3 hops of relays."""
    machines = 12
    with af.Job("bcast", pieces=2) as job:
        x = af.random_input("x", (4, 3), seed=5)
        everywhere = af.placement("cpu", ranks=list(range(machines)))
        h = F.relu(x.to_global(everywhere, af.sbp.broadcast))
        af.output("y", h.to_global(af.placement("cpu", ranks=[machines - 1]), af.sbp.broadcast))
    plan = af.compile(job, machines=machines, fan_width=3)
    comm = plan.tasks_by_type("comm_net")
    relayed = [t for t in comm if "(via m" in t.label]
    assert relayed, "no comm_net reads from another machine's copy"
    where = {t.task_id: t.machine_id for t in plan.tasks}
    remote = [sum(where[c] != where[d.producer_task_id] for c in d.consumer_task_ids)
              for d in plan.regst_descs().values()]
    assert max(remote) == 3  # each copy is sent to at most 3 other machines
    assert any("relayed by comm_net tasks, 3 per sender" in v for v in plan.ctrl["trees"].values())
    with af.Session(plan, timeout=60) as s:
        out = s.run_to_end()["y"]
    for piece, got in enumerate(out):
        xv = np.random.default_rng([5, piece]).standard_normal((4, 3)).astype("float32")
        np.testing.assert_allclose(got, np.maximum(xv, 0))


def test_fan_width_must_be_at_least_two():
    with pytest.raises(af.errors.CompileError, match="fan_width must be an int >= 2, got 1"):
        af.compile(layer(1, 2), machines=1, devices_per_machine=2, fan_width=1)


LAYER_JOB = '''
import actorflow as af
import actorflow.functional as F

DEVICES_PER_MACHINE = 8
COMPILE_OPTIONS = {"fan_width": 4}

def build_job(machines):
    ranks = af.placement("cpu", ranks=list(range(machines * 8)))
    with af.Job("layer", pieces=2) as job:
        x = af.random_input("x", (machines * 32, 16), seed=1, placement=ranks,
                            sbp=af.sbp.split(0))
        w = af.variable("w", (16, 16), init="normal", seed=2, placement=ranks)
        af.output("y", F.relu(x @ w))
    return job
'''


def test_plan_show_lists_the_trees(tmp_path, capsys):
    """What a user sees: `flowlaunch plan show` of a job file on 6 machines x 8 devices."""
    from actorflow.launcher.cli import main

    job = tmp_path / "layer.py"
    job.write_text(LAYER_JOB)
    assert main(["plan", "show", str(job), "--machines", "6"]) == 0
    out = capsys.readouterr().out
    assert "fan-in/fan-out trees (no task reads or feeds more than the width):" in out
    # 48 pieces: 12 groups of 4 devices (2 per machine), then 3 groups of 4, then the root
    assert ("relu0 S0->B: tree of width 4 through m0:d0: 48 pieces -> 12 + 3 + 1 concat "
            "nodes in 3 levels") in out
    assert "x B->S0: tree of width 4 through m0:d0: the B copy on m0:d0; scattered as" in out
    assert "matmul0: (a:S0, b:B) -> S0 on [m0:d0 .. m5:d7] (48 devices)" in out


def test_ticks_to_many_machines_are_relayed_too():
    """A variable split over 12 machines and gathered to machine 0: each part's task has no
    per-piece input, so it is paced by the source's tick, relayed at width 3."""
    machines = 12
    everywhere = af.placement("cpu", ranks=list(range(machines)))
    with af.Job("ticks", pieces=3) as job:
        x = af.random_input("x", (2, machines), seed=1)
        w = af.variable("w", (machines, 3), init="normal", seed=2, placement=everywhere,
                        sbp=af.sbp.split(0))
        af.output("y", x @ w.to_global(af.placement("cpu", ranks=[0]), af.sbp.broadcast))
    plan = af.compile(job, machines=machines, fan_width=3)
    ticked = {t.machine_id for t in plan.tasks if "tick" in t.consumed}
    assert len(ticked - {0}) > 3  # more remote machines need the tick than the width
    assert any("relayed by comm_net tasks, 3 per sender" in v
               for v in plan.ctrl["trees"].values())
    where = {t.task_id: t.machine_id for t in plan.tasks}
    remote = [sum(where[c] != where[d.producer_task_id] for c in d.consumer_task_ids)
              for d in plan.regst_descs().values()]
    assert max(remote) <= 3
    assert max(len(t.consumed_ids()) for t in plan.tasks) <= 3
    with af.Session(plan, timeout=60) as s:
        out = s.run_to_end()["y"]
    wv = np.random.default_rng(2).standard_normal((machines, 3)).astype("float32")
    for piece, got in enumerate(out):
        xv = np.random.default_rng([1, piece]).standard_normal((2, machines)).astype("float32")
        np.testing.assert_allclose(got, xv @ wv, rtol=1e-5, atol=1e-6)
