"""Optimizers and learning-rate schedulers against OneFlow 0.9.0 (what OneFlow's
``test_optim_sgd.py``, ``test_optim_adam.py``, ``test_optim_adamw.py`` and
``test_lr_scheduler.py`` check): a few steps on fixed parameters, with gradients from a
fixed loss or set by hand; OneFlow's parameter values after every step (and the learning
rates) are recorded and compared.

Tolerance: float32 updates, compared with ``rtol=1e-5, atol=1e-6`` (the order of float32
operations differs; a wrong rule is off by far more).

``tests/oneflow/oracle/of_optim.json`` holds what OneFlow gave for each ``case_*`` below;
``tests/oneflow/oracle/record_cases.py`` records it (needs OneFlow; these tests do not).
"""

from __future__ import annotations

import pytest

import actorflow as flow
from actorflow.errors import UsageError
from tests.oneflow import oracle_cases

# --- cases (run by oracle/record_cases.py with flow = oneflow) ---
optim = flow.optim
P0 = [[0.5, -1.5, 2.0], [1.0, 0.25, -0.75]]
Q0 = [0.3, -0.6, 0.9]
T = [[1.0, 0.0, -1.0], [2.0, -2.0, 0.5]]
C = [[0.3, 1.2, 0.7], [2.0, 0.4, 1.1]]


def _train(make_opt, steps=4, make_sched=None):
    p = flow.nn.Parameter(flow.tensor(P0))
    q = flow.nn.Parameter(flow.tensor(Q0))
    opt = make_opt([p, q])
    sched = make_sched(opt) if make_sched else None
    out = {}
    for k in range(steps):
        opt.zero_grad()
        loss = (flow.tensor(C) * (p - flow.tensor(T)) ** 2).sum() + (q * q * q).sum()
        loss.backward()
        opt.step()
        out[f"lr{k}"] = opt.param_groups[0]["lr"]
        if sched is not None:
            sched.step()
        out[f"p{k}"] = flow.tensor(p.numpy())
        out[f"q{k}"] = flow.tensor(q.numpy())
    return out


def case_sgd():
    return _train(lambda ps: optim.SGD(ps, lr=0.1))


def case_sgd_default_lr():
    return _train(lambda ps: optim.SGD(ps), steps=2)


def case_sgd_momentum():
    return _train(lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9))


def case_sgd_momentum_dampening():
    return _train(lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, dampening=0.5))


def case_sgd_weight_decay():
    return _train(lambda ps: optim.SGD(ps, lr=0.1, weight_decay=0.1))


def case_sgd_nesterov():
    return _train(lambda ps: optim.SGD(ps, lr=0.05, momentum=0.8, nesterov=True))


def case_sgd_momentum_weight_decay_nesterov():
    return _train(lambda ps: optim.SGD(ps, lr=0.05, momentum=0.8, weight_decay=0.2,
                                       nesterov=True))


def case_sgd_maximize():
    return _train(lambda ps: optim.SGD(ps, lr=0.1, momentum=0.5, maximize=True), steps=3)


def case_sgd_param_groups():
    def make(ps):
        return optim.SGD([{"params": [ps[0]], "lr": 0.2}, {"params": [ps[1]]}],
                         lr=0.01, momentum=0.5)
    return _train(make)


def case_adam():
    return _train(lambda ps: optim.Adam(ps, lr=0.1))


def case_adam_betas_eps_weight_decay():
    return _train(lambda ps: optim.Adam(ps, lr=0.05, betas=(0.8, 0.9), eps=1e-3,
                                        weight_decay=0.1))


def case_adam_no_bias_correction():
    return _train(lambda ps: optim.Adam(ps, lr=0.05, do_bias_correction=False))


def case_adam_amsgrad():
    return _train(lambda ps: optim.Adam(ps, lr=0.1, amsgrad=True), steps=5)


def case_adamw():
    return _train(lambda ps: optim.AdamW(ps, lr=0.1, weight_decay=0.1))


def case_adamw_default():
    return _train(lambda ps: optim.AdamW(ps, lr=0.1))


def case_adamw_betas():
    return _train(lambda ps: optim.AdamW(ps, lr=0.02, betas=(0.5, 0.75), eps=1e-4,
                                         weight_decay=0.5))


def case_grad_set_by_hand():
    p = flow.nn.Parameter(flow.tensor(P0))
    q = flow.nn.Parameter(flow.tensor(Q0))
    opt = optim.SGD([p, q], lr=0.5, momentum=0.5)
    out = {}
    for k, g in enumerate([[[1.0, 2.0, 3.0], [-1.0, -2.0, -3.0]],
                           [[0.5, 0.5, 0.5], [0.25, 0.0, -0.25]]]):
        p.grad = flow.tensor(g)
        opt.step()
        out[f"p{k}"] = flow.tensor(p.numpy())
    out["q_untouched"] = flow.tensor(q.numpy())  # no gradient: not updated
    return out


def case_param_group_clip_grad():
    p = flow.nn.Parameter(flow.tensor(P0))
    q = flow.nn.Parameter(flow.tensor(Q0))
    opt = optim.Adam([{"params": [p], "clip_grad_max_norm": 0.5, "clip_grad_norm_type": 2.0},
                      {"params": [q], "clip_grad_max_norm": 0.1,
                       "clip_grad_norm_type": float("inf")}], lr=0.1)
    out = {}
    for k in range(3):
        opt.zero_grad()
        ((flow.tensor(C) * (p - flow.tensor(T)) ** 2).sum() + (q * q * q).sum()).backward()
        opt.clip_grad()
        out[f"gp{k}"] = flow.tensor(p.grad.numpy())
        opt.step()
        out[f"p{k}"] = flow.tensor(p.numpy())
        out[f"q{k}"] = flow.tensor(q.numpy())
    return out


def case_step_lr():
    return _train(lambda ps: optim.SGD(ps, lr=0.1),  steps=6,
                  make_sched=lambda o: optim.lr_scheduler.StepLR(o, step_size=2, gamma=0.5))


def case_cosine_annealing_lr():
    return _train(lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9), steps=6,
                  make_sched=lambda o: optim.lr_scheduler.CosineAnnealingLR(o, T_max=4,
                                                                            eta_min=0.01))


def case_warmup_step_lr():
    def sched(o):
        inner = optim.lr_scheduler.StepLR(o, step_size=3, gamma=0.5)
        return optim.lr_scheduler.WarmupLR(inner, warmup_factor=0.25, warmup_iters=2)
    return _train(lambda ps: optim.SGD(ps, lr=0.1), steps=6, make_sched=sched)


def case_warmup_cosine_adam():
    def sched(o):
        inner = optim.lr_scheduler.CosineAnnealingLR(o, T_max=5)
        return optim.lr_scheduler.WarmupLR(inner, warmup_factor=0.5, warmup_iters=3)
    return _train(lambda ps: optim.Adam(ps, lr=0.1), steps=6, make_sched=sched)


def case_warmup_constant_method():
    def sched(o):
        return optim.lr_scheduler.WarmupLR(o, warmup_factor=0.5, warmup_iters=2,
                                           warmup_method="constant")
    return _train(lambda ps: optim.SGD(ps, lr=0.1), steps=4, make_sched=sched)


def case_warmup_prefix():
    def sched(o):
        inner = optim.lr_scheduler.StepLR(o, step_size=2, gamma=0.5)
        return optim.lr_scheduler.WarmupLR(inner, warmup_factor=0.2, warmup_iters=3,
                                           warmup_prefix=True)
    return _train(lambda ps: optim.SGD(ps, lr=0.1), steps=7, make_sched=sched)


def case_multistep_lr():
    return _train(lambda ps: optim.SGD(ps, lr=0.1), steps=6,
                  make_sched=lambda o: optim.lr_scheduler.MultiStepLR(o, [1, 4], gamma=0.5))


def case_exponential_lr():
    return _train(lambda ps: optim.SGD(ps, lr=0.1, momentum=0.5), steps=5,
                  make_sched=lambda o: optim.lr_scheduler.ExponentialLR(o, gamma=0.7))


def case_cosine_decay_lr():
    return _train(lambda ps: optim.Adam(ps, lr=0.1), steps=6,
                  make_sched=lambda o: optim.lr_scheduler.CosineDecayLR(o, decay_steps=4,
                                                                        alpha=0.1))


def case_linear_lr():
    return _train(lambda ps: optim.SGD(ps, lr=0.1), steps=6,
                  make_sched=lambda o: optim.lr_scheduler.LinearLR(o, start_factor=0.25,
                                                                   end_factor=0.75,
                                                                   total_iters=3))


def case_constant_lr():
    return _train(lambda ps: optim.SGD(ps, lr=0.1), steps=5,
                  make_sched=lambda o: optim.lr_scheduler.ConstantLR(o, factor=0.5,
                                                                     total_iters=2))


def case_polynomial_lr():
    return _train(lambda ps: optim.SGD(ps, lr=0.1), steps=6,
                  make_sched=lambda o: optim.lr_scheduler.PolynomialLR(
                      o, decay_batch=4, end_learning_rate=0.01, power=2.0))


def case_polynomial_lr_cycle():
    return _train(lambda ps: optim.SGD(ps, lr=0.1), steps=7,
                  make_sched=lambda o: optim.lr_scheduler.PolynomialLR(
                      o, decay_batch=3, end_learning_rate=0.01, cycle=True))


def case_warmup_multistep_adamw():
    def sched(o):
        inner = optim.lr_scheduler.MultiStepLR(o, [3, 5], gamma=0.1)
        return optim.lr_scheduler.WarmupLR(inner, warmup_factor=0.1, warmup_iters=4)
    return _train(lambda ps: optim.AdamW(ps, lr=0.05, weight_decay=0.1), steps=7,
                  make_sched=sched)


def case_warmup_defaults():
    return _train(lambda ps: optim.SGD(ps, lr=0.3), steps=6,
                  make_sched=lambda o: optim.lr_scheduler.WarmupLR(o))


def case_scheduler_get_last_lr():
    p = flow.nn.Parameter(flow.tensor(P0))
    opt = optim.SGD([p], lr=0.1)
    s = optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    lrs = [s.get_last_lr()[0]]
    for _ in range(3):
        opt.step()
        s.step()
        lrs.append(s.get_last_lr()[0])
    return {"lrs": lrs, "group_lr": opt.param_groups[0]["lr"]}


def case_sgd_negative_lr():
    optim.SGD([flow.nn.Parameter(flow.tensor(P0))], lr=-0.1)
    return {}


def case_adam_bad_beta():
    optim.Adam([flow.nn.Parameter(flow.tensor(P0))], betas=(1.5, 0.9))
    return {}
# --- end cases


ORACLE = oracle_cases.load(__file__)
# Deliberate differences: OneFlow asserts its arguments (AssertionError); actorflow raises
# its UsageError (actorflow.errors) with the same words.
DIFFERS: dict[str, tuple[type[BaseException], str]] = {
    "sgd_negative_lr": (UsageError, "Invalid learning rate: -0.1"),
    "adam_bad_beta": (UsageError, "Invalid beta parameter at index 0: 1.5"),
}


@pytest.mark.parametrize("name", sorted(ORACLE))
def test_same_as_oneflow(name):
    oracle_cases.check(name, globals()["case_" + name], ORACLE[name],
                       rtol=1e-5, atol=1e-6, differs=DIFFERS)


def test_every_case_is_recorded():
    assert oracle_cases.case_names(globals()) == set(ORACLE)
