"""The optimizer cases of ``test_of_optim.py`` run inside a job: ``loss.backward()`` and
``optimizer.step()`` traced, the updates assigns on variables, the schedule evaluated on the
step counter; after every run the variables must hold the values OneFlow 0.9.0 gave in
eager mode (``oracle/of_optim.json``), to the same float32 tolerance."""

from __future__ import annotations

import numpy as np
import pytest

import actorflow as af
import actorflow.nn as nn
import actorflow.optim as optim
from tests.oneflow import oracle_cases
from tests.optim.test_of_optim import P0, Q0, C, T

ORACLE = oracle_cases.load("test_of_optim.py")
S = optim.lr_scheduler
# the same optimizer and scheduler as the case of that name in test_of_optim.py
CONFIGS = {
    "sgd": (lambda ps: optim.SGD(ps, lr=0.1), None),
    "sgd_momentum": (lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9), None),
    "sgd_momentum_dampening": (lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9,
                                                    dampening=0.5), None),
    "sgd_weight_decay": (lambda ps: optim.SGD(ps, lr=0.1, weight_decay=0.1), None),
    "sgd_momentum_weight_decay_nesterov": (
        lambda ps: optim.SGD(ps, lr=0.05, momentum=0.8, weight_decay=0.2, nesterov=True), None),
    "adam": (lambda ps: optim.Adam(ps, lr=0.1), None),
    "adam_betas_eps_weight_decay": (
        lambda ps: optim.Adam(ps, lr=0.05, betas=(0.8, 0.9), eps=1e-3, weight_decay=0.1), None),
    "adam_no_bias_correction": (lambda ps: optim.Adam(ps, lr=0.05, do_bias_correction=False),
                                None),
    "adam_amsgrad": (lambda ps: optim.Adam(ps, lr=0.1, amsgrad=True), None),
    "adamw": (lambda ps: optim.AdamW(ps, lr=0.1, weight_decay=0.1), None),
    "step_lr": (lambda ps: optim.SGD(ps, lr=0.1), lambda o: S.StepLR(o, step_size=2, gamma=0.5)),
    "cosine_annealing_lr": (lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9),
                            lambda o: S.CosineAnnealingLR(o, T_max=4, eta_min=0.01)),
    "warmup_step_lr": (lambda ps: optim.SGD(ps, lr=0.1),
                       lambda o: S.WarmupLR(S.StepLR(o, step_size=3, gamma=0.5),
                                            warmup_factor=0.25, warmup_iters=2)),
    "warmup_cosine_adam": (lambda ps: optim.Adam(ps, lr=0.1),
                           lambda o: S.WarmupLR(S.CosineAnnealingLR(o, T_max=5),
                                                warmup_factor=0.5, warmup_iters=3)),
    "multistep_lr": (lambda ps: optim.SGD(ps, lr=0.1),
                     lambda o: S.MultiStepLR(o, [1, 4], gamma=0.5)),
    "exponential_lr": (lambda ps: optim.SGD(ps, lr=0.1, momentum=0.5),
                       lambda o: S.ExponentialLR(o, gamma=0.7)),
    "cosine_decay_lr": (lambda ps: optim.Adam(ps, lr=0.1),
                        lambda o: S.CosineDecayLR(o, decay_steps=4, alpha=0.1)),
    "linear_lr": (lambda ps: optim.SGD(ps, lr=0.1),
                  lambda o: S.LinearLR(o, start_factor=0.25, end_factor=0.75, total_iters=3)),
    "constant_lr": (lambda ps: optim.SGD(ps, lr=0.1),
                    lambda o: S.ConstantLR(o, factor=0.5, total_iters=2)),
    "polynomial_lr_cycle": (lambda ps: optim.SGD(ps, lr=0.1),
                            lambda o: S.PolynomialLR(o, decay_batch=3, end_learning_rate=0.01,
                                                     cycle=True)),
    "warmup_multistep_adamw": (lambda ps: optim.AdamW(ps, lr=0.05, weight_decay=0.1),
                               lambda o: S.WarmupLR(S.MultiStepLR(o, [3, 5], gamma=0.1),
                                                    warmup_factor=0.1, warmup_iters=4)),
    "warmup_prefix": (lambda ps: optim.SGD(ps, lr=0.1),
                      lambda o: S.WarmupLR(S.StepLR(o, step_size=2, gamma=0.5),
                                           warmup_factor=0.2, warmup_iters=3,
                                           warmup_prefix=True)),
}


class _PQ(nn.Module):
    def __init__(self):
        super().__init__()
        self.p = nn.Parameter(af.tensor(P0))
        self.q = nn.Parameter(af.tensor(Q0))


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_job_updates_give_oneflows_values(name):
    make_opt, make_sched = CONFIGS[name]
    want = ORACLE[name]["out"]
    steps = sum(1 for k in want if k.startswith("p"))
    m = _PQ()
    opt = make_opt([m.p, m.q])
    if make_sched is not None:
        make_sched(opt)
    with af.Job("train") as train:
        c, t = np.asarray(C, np.float32), np.asarray(T, np.float32)
        loss = ((m.p - t) ** 2 * c).sum() + (m.q * m.q * m.q).sum()
        loss.backward()
        opt.step()
        af.output("loss", loss)
    with af.Session(af.compile([train])) as s:
        for k in range(steps):
            s.run("train", {})
            for var in ("p", "q"):
                np.testing.assert_allclose(
                    af.read_variable(s, var), np.asarray(want[f"{var}{k}"]["v"]),
                    rtol=1e-5, atol=1e-6, err_msg=f"{name}: {var} after step {k}")


def test_every_config_is_a_recorded_case():
    assert set(CONFIGS) <= set(ORACLE)
