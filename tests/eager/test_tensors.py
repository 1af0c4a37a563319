"""Eager tensors through the public API: creation, values, meta, operators, printing,
functional ops outside a job, and the argument errors the compiler also gives."""

from __future__ import annotations

import numpy as np
import pytest

import actorflow as af
import actorflow.functional as F
from actorflow.errors import ArgumentTypeError, OpError, UsageError


def test_creation_meta_and_values():
    x = af.tensor([[1.0, -2.0], [3.0, 4.0]])
    assert (x.shape, x.dtype, str(x.device), x.ndim, len(x)) == ((2, 2), "float32", "cpu", 2, 2)
    assert x.numpy().tolist() == [[1.0, -2.0], [3.0, 4.0]]
    assert af.tensor(np.arange(3, dtype=np.int16)).dtype == "int16"
    assert af.tensor([1, 2], dtype="float64").numpy().dtype == np.float64
    np.testing.assert_array_equal(af.zeros(2, 3).numpy(), np.zeros((2, 3), np.float32))
    np.testing.assert_array_equal(af.ones((2,), dtype="int32").numpy(), np.ones(2, np.int32))
    np.testing.assert_array_equal(af.arange(2, 11, 3).numpy(), np.arange(2, 11, 3))
    np.testing.assert_array_equal(af.full((2,), 7.5).numpy(), [7.5, 7.5])
    a, b = af.randn(3, 4, seed=5).numpy(), af.randn(3, 4, seed=5).numpy()
    np.testing.assert_array_equal(a, b)
    assert a.shape == (3, 4) and a.dtype == np.float32 and a.std() > 0
    assert not np.array_equal(af.randn(8).numpy(), af.randn(8).numpy())


def test_operators_and_functional_ops_run_eagerly():
    a = np.array([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]], np.float32)
    b = np.array([[0.5], [2.0], [-1.0]], np.float32)
    x, w = af.tensor(a), af.tensor(b)
    y = F.relu(x) @ w + 1.0
    np.testing.assert_array_equal(y.numpy(), np.maximum(a, 0) @ b + np.float32(1.0))
    np.testing.assert_array_equal((2.0 - x).numpy(), 2.0 - a)
    np.testing.assert_array_equal((x / 2).numpy(), a / 2)
    np.testing.assert_array_equal((-x).numpy(), -a)
    np.testing.assert_array_equal((x ** 2).numpy(), a ** 2)
    np.testing.assert_array_equal(x.T.numpy(), a.T)
    np.testing.assert_array_equal(x.sum(dim=0).numpy(), a.sum(axis=0))
    np.testing.assert_allclose(x.softmax(1).numpy(), np.exp(a) / np.exp(a).sum(1, keepdims=True),
                               rtol=1e-6)
    np.testing.assert_array_equal(F.concat([x, x], dim=1).numpy(), np.concatenate([a, a], 1))
    np.testing.assert_array_equal(x.reshape(3, 2).numpy(), a.reshape(3, 2))
    np.testing.assert_array_equal(F.cast(x, "int32").numpy(), a.astype(np.int32))
    # numpy arrays where a tensor is expected become tensors on the call's device
    np.testing.assert_array_equal((x + a).numpy(), a + a)
    np.testing.assert_array_equal((a + x).numpy(), a + a)
    assert type(a + x) is af.EagerTensor
    # the example: no job, no error
    np.testing.assert_array_equal(F.relu(np.array([-1.0, 2.0])).numpy(), [0.0, 2.0])


def test_printing_waits_and_shows_values():
    x = af.tensor([1.5, -2.0]) * 2
    assert repr(x) == "tensor([ 3., -4.])"
    assert str(af.arange(3, dtype="int32")) == "tensor([0, 1, 2], dtype=int32)"
    assert af.tensor(2.5).item() == 2.5 and float(af.tensor([3.0])) == 3.0


def test_values_are_read_only_views():
    v = (af.tensor([1.0, 2.0]) + 1).numpy()
    with pytest.raises(ValueError, match="read-only"):
        v[0] = 5


def test_argument_and_shape_errors_are_raised_at_the_call():
    x, y = af.tensor(np.ones((4, 3))), af.tensor(np.ones((5, 2)))
    with pytest.raises(OpError, match=r"op 'matmul' \(matmul\).*\(4, 3\).*\(5, 2\)"):
        x @ y
    with pytest.raises(OpError, match=r"\(4, 3\) and \(5, 2\) cannot be broadcast"):
        F.add(x, y)
    with pytest.raises(ArgumentTypeError, match="valid signatures"):
        F.add(x, "nope")
    with pytest.raises(UsageError, match="unknown device type 'tpu'"):
        af.tensor([1.0], device="tpu")
    with pytest.raises(ArgumentTypeError, match="not supported"):
        af.tensor(["a", "b"])
    with pytest.raises(UsageError, match=r"placement ranks \[1\] do not exist in a world of 1"):
        x.to_global(af.placement("cpu", ranks=[0, 1]), af.sbp.split(0))
    af.sync()


def test_lazy_and_eager_tensors_do_not_mix_and_jobs_still_trace():
    e = af.tensor([1.0, 2.0])
    with af.Job("j") as job:
        x = af.input("x", (2,))
        with pytest.raises(UsageError, match=r"mixes lazy and eager\.local tensors"):
            x + e
        y = F.relu(x) + np.array([1.0, 1.0], np.float32)  # arrays are job constants here
        af.output("y", y)
    assert [o.op_type for o in job.spec.ops] == ["input", "relu", "const_array", "add",
                                                 "output"]
    with af.Session(af.compile(job)) as s:
        out = s.run({"x": np.array([-1.0, 3.0], np.float32)})
    np.testing.assert_array_equal(out, [1.0, 4.0])


def test_repeated_calls_reuse_one_op_expression_and_inference():
    from actorflow.frontend.eager_tensor import EAGER_LOCAL

    x = af.tensor(np.ones(3, np.float32))
    before = len(EAGER_LOCAL._plans)
    y = x
    for _ in range(50):
        y = y * 1.5
    assert len(EAGER_LOCAL._plans) <= before + 1
    np.testing.assert_array_equal(y.numpy(), np.full(3, 1.5 ** 50, np.float32))
