"""af.optim eagerly, against the update rules written out in numpy (PyTorch's documented
algorithms), the schedulers against their closed forms, and the errors of wrong use."""

from __future__ import annotations

import math

import numpy as np
import pytest

import actorflow as af
import actorflow.optim as optim
from actorflow.errors import ArgumentTypeError, UsageError

C = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
T = np.array([[1.0, 2.0, -1.0], [0.0, 0.5, 0.25]])


def grad_of(w: np.ndarray) -> np.ndarray:  # loss = sum(c * (w - t)^2)
    return 2 * C * (w - T)


def run(opt_cls, steps=5, sched=None, **kw):
    w = af.tensor(np.zeros((2, 3))).requires_grad_()
    opt = opt_cls([w], **kw)
    s = sched(opt) if sched else None
    out = []
    for _ in range(steps):
        opt.zero_grad()
        (af.tensor(C) * (w - af.tensor(T)) ** 2.0).sum().backward()
        opt.step()
        if s:
            s.step()
        out.append(w.numpy().copy())
    return out


def ref_sgd(steps, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
    w, buf, out = np.zeros((2, 3)), None, []
    for _ in range(steps):
        g = grad_of(w) + weight_decay * w
        if momentum:
            buf = g.copy() if buf is None else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        w = w - lr * g
        out.append(w)
    return out


def ref_adam(steps, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, decoupled=False,
             lrs=None):
    w, m, v, out = np.zeros((2, 3)), 0.0, 0.0, []
    for t in range(1, steps + 1):
        a = lrs[t - 1] if lrs else lr
        g = grad_of(w)
        if weight_decay and not decoupled:
            g = g + weight_decay * w
        if decoupled:
            w = w * (1 - a * weight_decay)
        m = betas[0] * m + (1 - betas[0]) * g
        v = betas[1] * v + (1 - betas[1]) * g * g
        denom = np.sqrt(v) / math.sqrt(1 - betas[1] ** t) + eps
        w = w - a / (1 - betas[0] ** t) * m / denom
        out.append(w)
    return out


@pytest.mark.parametrize("kw", [dict(lr=0.1), dict(lr=0.05, momentum=0.9),
                                dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.1),
                                dict(lr=0.05, momentum=0.5, weight_decay=0.01)])
def test_sgd_follows_the_update_rule(kw):
    for got, want in zip(run(optim.SGD, **kw), ref_sgd(5, **kw)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("cls,kw,decoupled", [
    (optim.Adam, dict(lr=0.1), False), (optim.Adam, dict(lr=0.1, weight_decay=0.1), False),
    (optim.AdamW, dict(lr=0.1, betas=(0.8, 0.99), weight_decay=0.05), True)])
def test_adam_and_adamw_follow_the_update_rule(cls, kw, decoupled):
    for got, want in zip(run(cls, **kw), ref_adam(5, decoupled=decoupled, **kw)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_schedulers_give_pytorch_and_oneflow_rates():
    w = af.tensor(np.zeros(2)).requires_grad_()

    def rates(make, n=8):
        opt = optim.SGD([w], lr=1.0)
        s = make(opt)
        out = []
        for _ in range(n):
            out.append(s.get_last_lr()[0])
            s.step()
        return out

    np.testing.assert_allclose(rates(lambda o: optim.lr_scheduler.StepLR(o, 3, 0.5)),
                               [1, 1, 1, .5, .5, .5, .25, .25])
    cos = [0.1 + 0.9 * (1 + math.cos(math.pi * t / 6)) / 2 for t in range(8)]
    np.testing.assert_allclose(rates(lambda o: optim.lr_scheduler.CosineAnnealingLR(
        o, 6, eta_min=0.1)), cos)
    warm = rates(lambda o: optim.lr_scheduler.WarmupLR(
        optim.lr_scheduler.CosineAnnealingLR(o, 4), warmup_factor=0.25, warmup_iters=2))
    # OneFlow's: a line from 0.25 to the cosine's rate at step 2, then the cosine at t
    np.testing.assert_allclose(warm, [0.25, 0.375, *[(1 + math.cos(math.pi * t / 4)) / 2
                                                     for t in range(2, 8)]])


def test_adam_with_a_schedule_uses_each_steps_rate():
    lrs = [0.1 * 0.5 ** (t // 2) for t in range(5)]
    got = run(optim.Adam, sched=lambda o: optim.lr_scheduler.StepLR(o, 2, 0.5), lr=0.1)
    for g, w in zip(got, ref_adam(5, 0.1, lrs=lrs)):
        np.testing.assert_allclose(g, w, rtol=1e-10)


def test_state_dict_holds_the_state_and_loads_back():
    w = af.tensor(np.zeros((2, 3))).requires_grad_()
    opt = optim.Adam([w], lr=0.1)
    (af.tensor(C) * (w - af.tensor(T)) ** 2.0).sum().backward()
    opt.step()
    sd = opt.state_dict()
    assert sorted(sd["state"][0]) == ["exp_avg", "exp_avg_sq", "step"]
    assert sd["param_groups"][0]["params"] == [0] and sd["param_groups"][0]["lr"] == 0.1
    opt2 = optim.Adam([w], lr=0.5)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == 0.1 and opt2.state[w]["step"] == 1
    with pytest.raises(UsageError, match="'state' and 'param_groups'"):
        opt2.load_state_dict({"state": {}})


def test_an_optimizer_refuses_what_is_not_a_parameter():
    w = af.tensor(np.zeros(2)).requires_grad_()
    with pytest.raises(ArgumentTypeError, match=r"params\[1\] of group 0.*not one"):
        optim.SGD([w, w * 2.0], lr=0.1)
    with pytest.raises(ArgumentTypeError, match="only optimize tensors"):
        optim.SGD([w, np.zeros(2)], lr=0.1)
    with pytest.raises(ArgumentTypeError, match="not one"):
        optim.SGD([af.tensor(np.zeros(2))], lr=0.1)
    with pytest.raises(UsageError, match="empty parameter list"):
        optim.Adam([])
    assert optim.SGD([w]).param_groups[0]["lr"] == 1e-3  # OneFlow's default
    with af.Job("j"):
        h = af.input("x", (2,)).requires_grad_() * 2.0
        v = af.variable("v", (2,), requires_grad=True)
        with pytest.raises(ArgumentTypeError, match="not one"):
            optim.SGD([v, h], lr=0.1)
        x = af.input("x2", (2,)).requires_grad_()
        with pytest.raises(ArgumentTypeError, match=r"only optimize variables in a job.*'x2'"):
            optim.SGD([x], lr=0.1)
