"""Training inside jobs: ``loss.backward()`` and ``optimizer.step()`` while a job is traced
make the compiler emit the backward ops and the updates (assigns on variables); a train and
an eval job share the model's variables in one plan.  The losses equal eager training step
by step, on one machine and data-parallel on two; optimizer state is variables, so a
checkpoint carries it (and one without it is refused, naming the directory)."""

from __future__ import annotations

import numpy as np
import pytest

import actorflow as af
import actorflow.functional as F
import actorflow.nn as nn
import actorflow.optim as optim
from actorflow.errors import UsageError

RNG = np.random.default_rng(5)
X = RNG.standard_normal((16, 6)).astype(np.float32)
Y = (X[:, 0] + X[:, 1] > 0).astype(np.int64) + (X[:, 2] > 0.5).astype(np.int64)


def make(opt_name):
    af.manual_seed(11)
    model = nn.Sequential(nn.Linear(6, 12), nn.GELU(), nn.LayerNorm(12), nn.Linear(12, 3))
    if opt_name == "sgd":
        opt = optim.SGD(model.parameters(), lr=0.2, momentum=0.9, weight_decay=1e-3)
        sched = None
    else:
        opt = optim.AdamW(model.parameters(), lr=0.05, weight_decay=0.01)
        sched = optim.lr_scheduler.WarmupLR(optim.lr_scheduler.StepLR(opt, 2, 0.5),
                                            warmup_factor=0.5, warmup_iters=2)
    return model, opt, sched


def eager_losses(opt_name, steps):
    model, opt, sched = make(opt_name)
    out = []
    for _ in range(steps):
        loss = nn.CrossEntropyLoss()(model(af.tensor(X)), af.tensor(Y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched:
            sched.step()
        out.append(float(loss))
    return out, model


def jobs(opt_name, machines):
    model, opt, _ = make(opt_name)
    P = af.placement("cpu", ranks=list(range(machines)))
    split = af.sbp.split(0) if machines > 1 else None
    model.to_global(P, af.sbp.broadcast)
    with af.Job("train") as train:
        x = af.input("x", X.shape, placement=P, sbp=split)
        y = af.input("y", Y.shape, "int64", placement=P, sbp=split)
        loss = nn.CrossEntropyLoss()(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        af.output("loss", loss)
    with af.Job("eval") as evaluate:
        x = af.input("x", X.shape, placement=P, sbp=split)
        af.output("pred", F.argmax(model(x), 1))
    return train, evaluate


@pytest.mark.parametrize("opt_name", ["sgd", "adamw"])
@pytest.mark.parametrize("machines", [1, 2])
def test_graph_training_gives_the_eager_losses(opt_name, machines):
    want, trained = eager_losses(opt_name, 6)
    plan = af.compile(list(jobs(opt_name, machines)), machines=machines)
    assert {"0.weight", "3.bias"} <= set(plan.job.variables)
    state = "momentum_buffer" if opt_name == "sgd" else "exp_avg_sq"
    assert f"0.weight.{state}" in plan.job.variables and "0.weight.step" in plan.job.variables
    with af.Session(plan) as s:
        got = [float(s.run("train", {"x": X, "y": Y})) for _ in range(6)]
        pred = s.run("eval", {"x": X})
        w = af.read_variable(s, "3.weight")
    np.testing.assert_allclose(got, want, rtol=2e-5)
    np.testing.assert_allclose(w, trained[3].weight.numpy(), rtol=1e-4, atol=1e-5)
    eager_pred = np.argmax(trained(af.tensor(X)).numpy(), 1)
    assert (pred == eager_pred).mean() >= 0.9
    assert got[-1] < got[0]


def test_optimizer_state_is_checkpointed_and_resumes_exactly(tmp_path):
    with af.Session(af.compile(list(jobs("adamw", 2)), machines=2)) as s:
        for _ in range(3):
            s.run("train", {"x": X, "y": Y})
        s.save(tmp_path / "ckpt")
        after = [float(s.run("train", {"x": X, "y": Y})) for _ in range(2)]
    with af.Session(af.compile(list(jobs("adamw", 1)))) as s:  # 1 machine loads it
        s.load(tmp_path / "ckpt")
        resumed = [float(s.run("train", {"x": X, "y": Y})) for _ in range(2)]
    np.testing.assert_allclose(resumed, after, rtol=1e-5)


def test_a_checkpoint_without_optimizer_state_is_refused(tmp_path):
    _, evaluate = jobs("sgd", 1)
    with af.Session(af.compile([evaluate])) as s:
        s.run("eval", {"x": X})
        s.save(tmp_path / "model_only")
    with af.Session(af.compile(list(jobs("sgd", 1)))) as s:
        with pytest.raises(UsageError, match=r"model_only.*lacks variables.*momentum_buffer"):
            s.load(tmp_path / "model_only")
