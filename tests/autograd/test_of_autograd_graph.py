"""The element-wise and softmax cases of ``test_of_autograd.py`` traced into a job: the
forward values and the gradient the job's backward computes must be OneFlow 0.9.0's eager
values (``oracle/of_autograd.json``), to the same float32 tolerance."""

from __future__ import annotations

import numpy as np
import pytest

import actorflow as af
import actorflow.nn as nn
from tests.autograd.test_of_autograd import A, C
from tests.oneflow import oracle_cases

ORACLE = oracle_cases.load("test_of_autograd.py")
POSITIVE = [[0.5, 1.5, 2.0], [1.0, 0.25, 0.75]]
# case name -> (the op, its input): as in the case of that name
UNARY = {
    "relu": (af.relu, A), "sigmoid": (af.sigmoid, A), "tanh": (af.tanh, A), "exp": (af.exp, A),
    "log": (af.log, POSITIVE), "sqrt": (af.sqrt, POSITIVE), "rsqrt": (af.rsqrt, POSITIVE),
    "abs": (af.abs, A), "gelu": (nn.functional.gelu, A), "silu": (nn.functional.silu, A),
    "softplus": (nn.functional.softplus, A), "clip": (lambda x: af.clip(x, -1.0, 1.0), A),
    "softmax": (lambda x: af.softmax(x, dim=1), A),
    "log_softmax": (lambda x: af.log_softmax(x, dim=1), A),
    "sum_dim": (lambda x: x.sum(dim=1, keepdim=True) * x, A),
    "index_row": (lambda x: x[1] * x[0], A),
}


class _Leaf(nn.Module):
    def __init__(self, values):
        super().__init__()
        self.x = nn.Parameter(af.tensor(values))


@pytest.mark.parametrize("name", sorted(UNARY))
def test_job_gradient_is_oneflows(name):
    fn, values = UNARY[name]
    m = _Leaf(values)
    with af.Job(name) as job:
        y = fn(m.x)
        (y * np.asarray(C, np.float32)).sum().backward()
        af.output("y", y)
        af.output("grad", m.x.grad)
    with af.Session(af.compile([job])) as s:
        got = s.run(name, {})
    want = ORACLE[name]["out"]
    for key in ("y", "grad"):
        np.testing.assert_allclose(np.asarray(got[key]).reshape(want[key]["shape"]),
                                   np.asarray(want[key]["v"]), rtol=1e-5, atol=1e-6,
                                   err_msg=f"{name}: {key}")
