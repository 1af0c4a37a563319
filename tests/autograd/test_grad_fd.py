"""Every op's gradient rule against central finite differences, in float64, on random
shapes (hypothesis), in eager mode on the CPU; the same rules on the emulated CUDA device
give the CPU's gradients.  The loss is ``sum(f(inputs) * w)`` with random weights ``w``, so
every element of the op's output carries a different upstream gradient."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import actorflow as af
from actorflow.kernels.grad import GRADS
from actorflow.kernels.registry import op_types
from tests.autograd.cases import CASES, Case

EPS = 1e-6


def _loss_value(case: Case, arrays: list[np.ndarray], w: np.ndarray) -> float:
    ts = [af.tensor(a) for a in arrays]
    return float((np.asarray(case.fn(*ts).numpy()) * w).sum())


def analytic(case: Case, arrays: list[np.ndarray], w: np.ndarray,
             device: str = "cpu") -> list[np.ndarray]:
    ts = [af.tensor(a, device=device) for a in arrays]
    for i in case.diff:
        ts[i].requires_grad_()
    out = case.fn(*ts)
    (out * af.tensor(w, device=device)).sum().backward()
    grads = []
    for i in case.diff:
        g = ts[i].grad
        assert g is not None, f"input {i} got no gradient"
        assert g.shape == ts[i].shape and g.dtype == ts[i].dtype
        grads.append(np.asarray(g.cpu().numpy()))
    return grads


def numeric(case: Case, arrays: list[np.ndarray], w: np.ndarray) -> list[np.ndarray]:
    grads = []
    for i in case.diff:
        g = np.zeros_like(arrays[i])
        for idx in np.ndindex(*arrays[i].shape):
            plus = [a.copy() for a in arrays]
            minus = [a.copy() for a in arrays]
            plus[i][idx] += EPS
            minus[i][idx] -= EPS
            g[idx] = (_loss_value(case, plus, w) - _loss_value(case, minus, w)) / (2 * EPS)
        grads.append(g)
    return grads


def draw(case: Case, m: int, n: int, seed: int) -> tuple[list[np.ndarray], np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = case.make(rng, m, n)
    out = case.fn(*[af.tensor(a) for a in arrays])
    return arrays, rng.uniform(-1.0, 1.0, out.shape)


@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=st.integers(1, 3), n=st.integers(1, 3), seed=st.integers(0, 2**31))
def test_gradient_matches_finite_differences(name, m, n, seed):
    case = CASES[name]
    arrays, w = draw(case, m, n, seed)
    got, want = analytic(case, arrays, w), numeric(case, arrays, w)
    for i, g, nwant in zip(case.diff, got, want):
        np.testing.assert_allclose(g, nwant, rtol=case.rtol, atol=1e-6,
                                   err_msg=f"{name}: gradient of input {i}")


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_on_the_emulated_device_equals_the_cpu(name):
    case = CASES[name]
    arrays, w = draw(case, 2, 3, 1234)
    cpu = analytic(case, arrays, w, "cpu")
    dev = analytic(case, arrays, w, "cuda")
    for g_cpu, g_dev in zip(cpu, dev):
        np.testing.assert_allclose(g_dev, g_cpu, rtol=1e-12, atol=1e-12)


NO_RULE = {  # ops no gradient flows through: generators, state, boxing, integer results,
    # and the gradient kernels themselves (no second derivative)
    "arange", "argmax", "argmin", "assign", "box_slice", "busy", "const_array", "constant",
    "cross_entropy_grad", "dropout_grad", "eq", "gather_grad", "ge", "gelu_grad", "gt",
    "layer_norm_grad", "le", "learning_rate", "logical_and", "logical_not", "logical_or",
    "logical_xor", "lt", "microbatch_place", "microbatch_slice",
    "ne", "one_hot", "random_normal", "relu_grad", "scalar_eq", "scalar_ge", "scalar_gt",
    "scalar_le", "scalar_logical_and", "scalar_logical_or", "scalar_logical_xor", "scalar_lt",
    "scalar_ne", "sleep", "stamp", "strided_slice_grad", "variable", "variable_load",
    "variable_part", "variable_save", "fail", "fill_like"}


def test_every_op_has_a_rule_or_is_listed_as_having_none():
    missing = sorted(t for t in op_types()  # not the ops tests register for themselves
                     if t not in GRADS and t not in NO_RULE and not t.startswith("test_"))
    assert not missing, f"ops with no gradient rule (add one, or list why not): {missing}"


def test_every_rule_is_checked_by_a_case():
    covered = {t for c in CASES.values() for t in c.op_types} | {"fill_like", "sign", "add_n",
                                                                 "to_global"}
    unchecked = sorted(t for t in GRADS if t not in covered)
    assert not unchecked, f"gradient rules no finite-difference case exercises: {unchecked}"
