"""``af.Job(..., micro_batches=k)``: each request's batch runs as k pieces through the model
(a ``repeat`` task cuts it), every gradient is summed over them by an ``acc`` task, and the
update runs once per request; so the losses equal one-piece training, also when two stages
of the model sit on two machines (pipeline parallel) and when the batch is split over two
(data parallel)."""

from __future__ import annotations

import numpy as np
import pytest

import actorflow as af
import actorflow.nn as nn
import actorflow.optim as optim
from actorflow.errors import CompileError

RNG = np.random.default_rng(2)
X = RNG.standard_normal((16, 5)).astype(np.float32)
Y = (X[:, 0] > 0).astype(np.int64) + (X[:, 1] > 0.3).astype(np.int64)


def train_job(k, layout="one"):
    af.manual_seed(4)
    model = nn.Sequential(nn.Linear(5, 12), nn.Tanh(), nn.Linear(12, 3))
    opt = optim.Adam(model.parameters(), lr=0.05)
    r0, r1, both = (af.placement("cpu", ranks=[0]), af.placement("cpu", ranks=[1]),
                    af.placement("cpu", ranks=[0, 1]))
    if layout == "pipeline":
        model[0].to_global(r0)
        model[2].to_global(r1)
    elif layout == "data":
        model.to_global(both, af.sbp.broadcast)
    with af.Job("train", micro_batches=k) as job:
        split = af.sbp.split(0) if layout == "data" else None
        x = af.input("x", X.shape, placement=both if split else None, sbp=split)
        y = af.input("y", Y.shape, "int64", placement=both if split else None, sbp=split)
        if layout == "pipeline":
            h = model[1](model[0](x)).to_global(r1)  # stage 0 on machine 0, stage 1 on 1
            logits, y = model[2](h), y.to_global(r1)
        else:
            logits = model(x)
        loss = nn.CrossEntropyLoss()(logits, y)
        loss.backward()
        opt.step()
        af.output("loss", loss)
    return job


def losses(k, layout="one", machines=1, steps=4):
    plan = af.compile([train_job(k, layout)], machines=machines)
    with af.Session(plan) as s:
        out = [s.run("train", {"x": X, "y": Y}) for _ in range(steps)]
    return plan, np.array(out)


def test_micro_batches_train_like_the_whole_batch_and_use_acc_and_repeat():
    _, whole = losses(1)
    plan, micro = losses(4)
    assert micro.shape == (4, 4)  # the loss of every micro-batch, per request
    np.testing.assert_allclose(micro.mean(1), whole, rtol=1e-5)
    kinds = [t.task_type for t in plan.tasks if t.job_id == 0]
    accs = [t for t in plan.tasks if t.task_type == "acc"]
    assert "repeat" in kinds and len(accs) >= 4 and all(t.attrs["acc_num"] == 4 for t in accs)


@pytest.mark.parametrize("layout", ["pipeline", "data"])
def test_two_machines_with_micro_batches_give_the_one_device_losses(layout):
    _, whole = losses(1)
    plan, micro = losses(4, layout, machines=2)
    np.testing.assert_allclose(micro.mean(1), whole, rtol=1e-5)
    machines_of_accs = {t.machine_id for t in plan.tasks if t.task_type == "acc"}
    assert machines_of_accs == {0, 1}  # each stage / replica accumulates its own gradients


def test_micro_batch_errors_name_the_input_and_the_variable():
    with pytest.raises(CompileError, match=r"input 'x' of shape \(10, 2\).*3 micro-batches"):
        with af.Job("bad", micro_batches=3):
            af.input("x", (10, 2))
    with pytest.raises(CompileError, match="assigns variable 'w' a value computed per micro"):
        with af.Job("bad2", micro_batches=2):
            x = af.input("x", (4, 2))
            w = af.variable("w", (2, 2))
            w.assign_(w + (x.T @ x))
