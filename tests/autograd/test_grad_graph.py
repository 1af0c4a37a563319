"""The same gradient rules inside a job: ``loss.backward()`` while tracing adds the gradient
ops to the job, the compiler lowers them like the forward, and the gradients a Session
returns equal the eager ones; on two machines (inputs split, the compiler choosing every
gradient's SBP) they still do."""

from __future__ import annotations

import numpy as np
import pytest

import actorflow as af
from tests.autograd.cases import CASES
from tests.autograd.test_grad_fd import analytic, draw

DP_CASES = ["matmul", "layer_norm", "cross_entropy", "embedding", "gelu", "softmax",
            "batch_matmul", "mul", "bias_add", "log_softmax", "mean"]


def graph_grads(name: str, arrays: list[np.ndarray], w: np.ndarray,
                machines: int = 1) -> list[np.ndarray]:
    case = CASES[name]
    ranks = af.placement("cpu", ranks=list(range(machines)))
    with af.Job(f"grad_{name}") as job:
        ts = []
        for i, a in enumerate(arrays):
            sbp = af.sbp.split(0) if machines > 1 and a.shape[0] % machines == 0 else None
            t = af.input(f"x{i}", a.shape, a.dtype.name, placement=ranks if sbp else None,
                         sbp=sbp)
            ts.append(t.requires_grad_() if i in case.diff else t)
        loss = (case.fn(*ts) * w).sum()
        loss.backward()
        for i in case.diff:
            af.output(f"g{i}", ts[i].grad)
    plan = af.compile(job, machines=machines)
    with af.Session(plan) as s:
        out = s.run({f"x{i}": a for i, a in enumerate(arrays)})
    if not isinstance(out, dict):  # one output: the session hands the array itself
        out = {f"g{case.diff[0]}": out}
    return [out[f"g{i}"] for i in case.diff]


@pytest.mark.parametrize("name", sorted(CASES))
def test_graph_gradients_equal_eager(name):
    arrays, w = draw(CASES[name], 2, 3, 99)
    want = analytic(CASES[name], arrays, w)
    for g, e in zip(graph_grads(name, arrays, w), want):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", DP_CASES)
def test_graph_gradients_on_two_machines_equal_eager(name):
    arrays, w = draw(CASES[name], 4, 3, 7)
    want = analytic(CASES[name], arrays, w)
    for g, e in zip(graph_grads(name, arrays, w, machines=2), want):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)


DEVICE_CASES = ["matmul", "layer_norm", "cross_entropy", "gelu", "batch_matmul", "getitem"]


@pytest.mark.parametrize("name", DEVICE_CASES)
def test_graph_gradients_on_the_emulated_device_equal_eager(name):
    case = CASES[name]
    arrays, w = draw(case, 2, 3, 5)
    want = analytic(case, arrays, w)
    with af.Job(f"dev_{name}") as job:
        ts = []
        for i, a in enumerate(arrays):
            t = af.input(f"x{i}", a.shape, a.dtype.name).to_global(
                placement=af.placement("cuda", ranks=[0]))
            ts.append(t.requires_grad_() if i in case.diff else t)
        (case.fn(*ts) * w).sum().backward()
        for i in case.diff:
            af.output(f"g{i}", ts[i].grad)
    plan = af.compile(job)
    assert any(t.task_type == "copy_h2d" for t in plan.tasks)  # the kernels run on the device
    with af.Session(plan) as s:
        out = s.run({f"x{i}": a for i, a in enumerate(arrays)})
    out = out if isinstance(out, dict) else {f"g{case.diff[0]}": out}
    for i, e in zip(case.diff, want):
        np.testing.assert_allclose(out[f"g{i}"], e, rtol=1e-12, atol=1e-12)
