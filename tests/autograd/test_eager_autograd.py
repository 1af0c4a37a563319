"""Eager autograd through the public API: requires_grad, .grad accumulation, no_grad,
detach, retain_graph, retain_grad, autograd.grad, in-place updates of leaves, and the
errors a wrong use gets (values checked against hand-derived gradients)."""

from __future__ import annotations

import numpy as np
import pytest

import actorflow as af
import actorflow.functional as F
from actorflow.errors import AutogradError
from actorflow.frontend.dispatch import op_expr


def leaf(a):
    return af.tensor(np.asarray(a, dtype=np.float64)).requires_grad_()


def test_backward_returns_before_the_gradients_are_computed_and_accumulates():
    x = leaf([1.0, 2.0, 3.0])
    (x * x).sum().backward()
    assert x.grad is not None and x.is_leaf and x.requires_grad
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])
    (x * 3.0).sum().backward()  # a second graph: .grad accumulates
    np.testing.assert_allclose(x.grad.numpy(), [5.0, 7.0, 9.0])
    x.grad = None
    (x ** 3.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 12.0, 27.0])


def test_a_tensor_used_twice_gets_the_sum_of_both_paths():
    x = leaf([[1.0, -2.0], [0.5, 4.0]])
    y = F.relu(x) * x + F.exp(x)
    y.mean().backward()
    a = np.array([[1.0, -2.0], [0.5, 4.0]])
    np.testing.assert_allclose(x.grad.numpy(), (2 * a * (a > 0) + np.exp(a)) / 4)


def test_no_grad_and_detach_cut_the_graph():
    x = leaf([1.0, 2.0])
    with af.no_grad():
        y = x * 2.0
    assert not y.requires_grad and y.grad_fn is None
    z = x.detach()
    assert not z.requires_grad and z.is_leaf
    np.testing.assert_array_equal(z.numpy(), [1.0, 2.0])
    w = x * 3.0
    assert w.requires_grad and not w.is_leaf and w.grad_fn is not None
    assert "Mul" in repr(w.grad_fn) or "ScalarMul" in repr(w.grad_fn)

    @af.no_grad()
    def f(t):
        return t * 5.0

    assert not f(x).requires_grad
    with af.no_grad(), af.enable_grad():
        assert (x * 1.0).requires_grad
    af.set_grad_enabled(False)
    try:
        assert not (x * 1.0).requires_grad and not af.is_grad_enabled()
    finally:
        af.set_grad_enabled(True)


def test_second_backward_needs_retain_graph():
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 8.0])
    with pytest.raises(AutogradError, match=r"second time.*retain_graph=True"):
        y.backward()


def test_retain_grad_and_autograd_grad():
    x = leaf([1.0, 2.0, 3.0])
    h = x * 2.0
    h.retain_grad()
    (h * h).sum().backward()
    np.testing.assert_allclose(h.grad.numpy(), [4.0, 8.0, 12.0])
    np.testing.assert_allclose(x.grad.numpy(), [8.0, 16.0, 24.0])
    x2 = leaf([1.0, 2.0])
    (g,) = af.autograd.grad((x2 * x2).sum(), [x2])
    np.testing.assert_allclose(g.numpy(), [2.0, 4.0])
    assert x2.grad is None


def test_backward_with_a_gradient_and_of_a_non_scalar():
    x = leaf([1.0, 2.0])
    y = x * x
    with pytest.raises(AutogradError, match="only for scalar outputs"):
        y.backward()
    y.backward(af.tensor(np.array([1.0, 0.5])))
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])


def test_in_place_updates_of_a_leaf_under_no_grad_keep_its_identity():
    w = leaf([1.0, 2.0])
    (w * w).sum().backward()
    with pytest.raises(AutogradError, match="leaf tensor that requires grad"):
        w.sub_(w.grad)
    with af.no_grad():
        w.sub_(w.grad, alpha=0.5)
    np.testing.assert_allclose(w.numpy(), [0.0, 0.0])
    assert w.requires_grad and w.is_leaf
    with af.no_grad():
        w.add_(1.0).mul_(3.0)
        w.grad.zero_()
    np.testing.assert_allclose(w.numpy(), [3.0, 3.0])
    np.testing.assert_allclose(w.grad.numpy(), [0.0, 0.0])


def test_errors_name_the_op_and_what_was_expected():
    x = leaf([1.0, 2.0])
    y = op_expr("sleep", ("in",))({"in": x}, {"ms": 0.0})  # an op with no gradient rule
    with pytest.raises(AutogradError, match="op 'sleep': it has no gradient rule"):
        y.sum().backward()
    with pytest.raises(AutogradError, match="does not require grad"):
        af.tensor(np.ones(2)).sum().backward()
    with pytest.raises(AutogradError, match="floating point"):
        af.tensor(np.ones(2, dtype=np.int64)).requires_grad_()
    with pytest.raises(AutogradError, match="assigned grad has shape"):
        x.grad = af.tensor(np.ones(3))
    assert not F.argmax(x * 1.0).requires_grad  # integer results carry no gradient
    assert not (x > 1.0).requires_grad


def test_a_gradient_of_the_wrong_shape_names_the_op():
    from actorflow.kernels.grad import GRADS, register_grad

    register_grad("busy", lambda F, ctx, dy: {"in": F.sum(dy, [0], True)})
    try:
        x = leaf([[1.0, 2.0], [3.0, 4.0]])
        y = op_expr("busy", ("in",))({"in": x}, {"iters": 0, "size": 1})
        with pytest.raises(AutogradError, match=r"op 'busy'.*input 'in' has shape \(1, 2\), "
                                                r"the input has \(2, 2\)"):
            y.sum().backward()
    finally:
        del GRADS._entries["busy"]


def test_new_ops_list_their_signatures_on_misuse():
    from actorflow.errors import ArgumentTypeError

    x = af.tensor(np.ones((2, 3), np.float32))
    with pytest.raises(ArgumentTypeError, match=r"(?s)where\(\).*Tensor condition, Tensor x, "
                                                r"Tensor y.*Scalar y"):
        F.where(1.0, x, x)
    with pytest.raises(ArgumentTypeError, match=r"(?s)max\(\).*Int dim.*Tensor other"):
        F.max(x, "a")
    with pytest.raises(ArgumentTypeError, match=r"cross_entropy\(\): argument 'target'"):
        F.cross_entropy(x, "t")
    with pytest.raises(TypeError, match=r"layer_norm\(\)"):
        F.layer_norm(x, "3")
