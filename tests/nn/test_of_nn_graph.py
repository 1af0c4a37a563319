"""Modules traced into a job give OneFlow 0.9.0's eager values (``oracle/of_nn.json``):
the forward output, the loss and every parameter's gradient of the fixed-weight cases of
``test_of_nn.py``, computed by the compiled plan (parameters are the job's variables)."""

from __future__ import annotations

import numpy as np
import pytest

import actorflow as af
import actorflow.nn as nn
from tests.nn import test_of_nn as cases
from tests.oneflow import oracle_cases

ORACLE = oracle_cases.load("test_of_nn.py")
C3 = np.asarray([[0.3, -1.2, 0.7], [2.0, -0.4, 1.1]], np.float32)


def _sequential_mlp():
    m = cases._mlp()
    y = m(af.input("x", (2, 3)))
    loss = nn.CrossEntropyLoss()(y, af.input("t", (2,), "int64"))
    loss.backward()
    return ({"y": y, "loss": loss, "w0": m[0].weight.grad, "b0": m[0].bias.grad,
             "w2": m[2].weight.grad, "b2": m[2].bias.grad},
            {"x": np.asarray(cases.X, np.float32), "t": np.asarray([1, 0], np.int64)})


def _linear_forward_backward():
    m = cases._fixed_linear()
    y = m(af.input("x", (2, 3)))
    (y * np.asarray(cases.C4, np.float32)).sum().backward()
    return ({"y": y, "w": m.weight.grad, "b": m.bias.grad},
            {"x": np.asarray(cases.X, np.float32)})


def _layer_norm():
    ln = nn.LayerNorm(3)
    ln.weight = nn.Parameter(af.tensor([1.5, -0.5, 2.0]))
    ln.bias = nn.Parameter(af.tensor([0.1, 0.2, -0.3]))
    y = ln(af.input("x", (2, 3)))
    (y * C3).sum().backward()
    return ({"y": y, "w": ln.weight.grad, "b": ln.bias.grad},
            {"x": np.asarray(cases.X, np.float32)})


def _embedding():
    e = nn.Embedding(4, 3)
    e.weight = nn.Parameter(af.tensor(cases.W))
    y = e(af.input("idx", (2, 2), "int64"))
    (y * y).sum().backward()
    return ({"y": y, "w": e.weight.grad}, {"idx": np.asarray([[0, 2], [2, 3]], np.int64)})


def _gelu_module():
    class Scale(nn.Module):  # GELU of a parameter: its gradient comes out of the job
        def __init__(self):
            super().__init__()
            self.s = nn.Parameter(af.tensor(cases.X))

        def forward(self):
            return nn.GELU()(self.s)

    m = Scale()
    y = m()
    (y * C3).sum().backward()
    return {"y": y, "grad": m.s.grad}, {}


GRAPHS = {"sequential_mlp": _sequential_mlp, "linear_forward_backward": _linear_forward_backward,
          "layer_norm": _layer_norm, "embedding": _embedding, "gelu_module": _gelu_module}


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_job_gives_oneflows_values(name):
    want = ORACLE[name]["out"]
    with af.Job(name) as job:
        outs, feed = GRAPHS[name]()
        for key, t in outs.items():
            af.output(key, t)
    with af.Session(af.compile([job])) as s:
        got = s.run(name, feed)
    for key in outs:
        np.testing.assert_allclose(np.asarray(got[key]).reshape(want[key]["shape"]),
                                   np.asarray(want[key]["v"]), rtol=1e-5, atol=1e-6,
                                   err_msg=f"{name}: {key}")


def test_clipping_inside_a_job_gives_oneflows_step():
    """clip_grad_norm_ in a job rescales the variables' gradients the optimizer then reads."""
    m = cases._mlp()
    opt = af.optim.SGD(m.parameters(), lr=0.5)
    with af.Job("train") as job:
        x = af.input("x", (2, 3))
        loss = nn.CrossEntropyLoss()(m(x * 3.0), af.input("t", (2,), "int64"))
        loss.backward()
        total = nn.utils.clip_grad_norm_(m.parameters(), 0.25)
        opt.step()
        af.output("total", total)
    with af.Session(af.compile([job])) as s:
        s.run("train", {"x": np.asarray(cases.X, np.float32), "t": np.asarray([1, 0])})
        w0, b2 = af.read_variable(s, "0.weight"), af.read_variable(s, "2.bias")
    want = ORACLE["clip_grad_norm_then_sgd"]["out"]
    np.testing.assert_allclose(w0, want["w0"]["v"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b2, want["b2"]["v"], rtol=1e-5, atol=1e-6)


def test_clip_grad_norm_error_if_nonfinite_names_the_norm():
    p = nn.Parameter(af.tensor([1.0, 2.0]))
    (p * float("inf")).sum().backward()
    with pytest.raises(af.errors.UsageError, match=r"norm of order 2\.0 .* non-finite"):
        nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
