"""Dispatch in one step: a functional call leaves a plan keyed by its arguments' types and
metas; a repeated call is one lookup and one issue, with the same values and errors."""

from __future__ import annotations

import numpy as np
import pytest

import actorflow as af
import actorflow.functional as F
from actorflow.errors import ArgumentTypeError, UsageError
from actorflow.frontend import dispatch
from actorflow.frontend.eager_tensor import EAGER_LOCAL


def test_a_repeated_call_skips_binding_and_the_interpreter(monkeypatch):
    x = af.tensor(np.arange(4, dtype=np.float32))
    F.add._fast.clear()
    y = x + 1.5  # the whole way: leaves a plan
    assert len(F.add._fast) == 1

    def whole_way(*a, **k):
        raise AssertionError("the fast path went the whole way")

    monkeypatch.setattr(EAGER_LOCAL, "apply", whole_way)
    monkeypatch.setattr(type(F.add), "_slow", whole_way)
    z = y + 2.5  # same types and metas, another scalar value
    np.testing.assert_array_equal(z.numpy(), np.arange(4, dtype=np.float32) + 4.0)


def test_new_shapes_dtypes_and_scalar_types_make_new_plans():
    F.add._fast.clear()
    i = af.tensor(np.arange(3, dtype=np.int64))
    assert (i + 1).dtype == "int64" and (i + 1.5).dtype == "float32"  # OneFlow's promotion
    assert (i + 2).numpy().tolist() == [2, 3, 4] and (i + 0.5).numpy().tolist() == [0.5, 1.5, 2.5]
    f = af.tensor(np.ones((2, 3), np.float32))
    assert (f + 1).dtype == "float32" and (f + 1).shape == (2, 3)
    assert len(F.add._fast) == 4  # (int64, int 1), (int64, float), (int64, int 2), (f32 2x3, 1)
    np.testing.assert_array_equal((i + True).numpy(), [1, 2, 3])


def test_bad_arguments_give_the_same_errors_after_plans_exist():
    x = af.tensor(np.ones(3, np.float32))
    for _ in range(2):
        x + 1.0
        F.relu(x)
        with pytest.raises(ArgumentTypeError, match="valid signatures"):
            F.add(x, "one")
        with pytest.raises(UsageError, match="inplace=True is not supported"):
            F.relu(x, True)
        with pytest.raises(UsageError, match="inplace=True is not supported"):
            F.pow(x, 2.0, inplace=True)
    with pytest.raises(af.errors.OpError, match=r"shapes \(3,\) and \(2,\) cannot be broadcast"):
        x + af.tensor(np.ones(2, np.float32))


def test_the_issue_hook_sees_every_op_once_on_both_paths():
    seen = []
    dispatch.set_issue_hook(lambda expr, ins, attrs, out: seen.append(
        (expr.op_type, sorted(ins), dict(attrs), type(out).__name__)))
    try:
        x = af.tensor(np.ones(2, np.float32))
        for _ in range(3):  # first call: the whole way; then the fast path
            x = F.relu(x * 2.0)
        F.matmul(af.ones(2, 2), af.ones(2, 2), transpose_b=True)
    finally:
        dispatch.set_issue_hook(None)
    assert seen[:2] == [("scalar_mul", ["in"], {"scalar": 2.0}, "EagerTensor"),
                        ("relu", ["in"], {}, "EagerTensor")]
    assert [s[0] for s in seen].count("scalar_mul") == 3 and len(seen) >= 7
    assert seen[-1][:3] == ("matmul", ["a", "b"], {"transpose_a": False, "transpose_b": True})
    np.testing.assert_array_equal(x.numpy(), [8.0, 8.0])
