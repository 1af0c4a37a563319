"""af.nn through its public API: layouts and initial values as PyTorch/OneFlow define them,
forward values against numpy, naming, state dicts, train/eval, devices, containers."""

from __future__ import annotations

import numpy as np
import pytest

import actorflow as af
import actorflow.nn as nn
from actorflow.errors import UsageError


def test_linear_has_pytorch_layout_init_and_values():
    af.manual_seed(3)
    lin = nn.Linear(5, 3)
    w, b = lin.weight.numpy(), lin.bias.numpy()
    assert w.shape == (3, 5) and b.shape == (3,) and w.dtype == np.float32
    bound = 1 / np.sqrt(5)
    assert np.all(np.abs(w) <= bound) and np.all(np.abs(b) <= bound) and w.std() > bound / 4
    x = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    np.testing.assert_allclose(lin(af.tensor(x)).numpy(), x @ w.T + b, rtol=1e-6)
    x3 = np.random.default_rng(1).standard_normal((2, 4, 5)).astype(np.float32)
    np.testing.assert_allclose(lin(af.tensor(x3)).numpy(), x3 @ w.T + b, rtol=1e-5)
    af.manual_seed(3)
    np.testing.assert_array_equal(nn.Linear(5, 3).weight.numpy(), w)  # seeded: reproducible
    assert "in_features=5, out_features=3, bias=True" in repr(lin)


def test_embedding_layernorm_activations_against_numpy():
    af.manual_seed(0)
    emb, ln = nn.Embedding(7, 4), nn.LayerNorm(4)
    ids = np.array([[1, 6, 0], [3, 3, 2]])
    table = emb.weight.numpy()
    e = emb(af.tensor(ids))
    np.testing.assert_array_equal(e.numpy(), table[ids])
    y = ln(e).numpy()
    ref = (table[ids] - table[ids].mean(-1, keepdims=True)) / np.sqrt(
        table[ids].var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)
    x = np.linspace(-3, 3, 13).astype(np.float32)
    t = af.tensor(x)
    np.testing.assert_allclose(nn.ReLU()(t).numpy(), np.maximum(x, 0))
    np.testing.assert_allclose(nn.SiLU()(t).numpy(), x / (1 + np.exp(-x)), rtol=1e-6)
    import math
    gelu = np.array([v * 0.5 * (1 + math.erf(v / math.sqrt(2))) for v in x])
    np.testing.assert_allclose(nn.GELU()(t).numpy(), gelu, rtol=1e-5, atol=1e-6)
    tanh_gelu = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    np.testing.assert_allclose(nn.GELU("tanh")(t).numpy(), tanh_gelu, rtol=1e-5, atol=1e-6)


def test_dropout_in_train_and_eval_mode():
    drop = nn.Dropout(0.5)
    x = af.tensor(np.ones((50, 40), np.float32))
    y = drop(x).numpy()
    assert set(np.unique(y)) <= {0.0, 2.0} and 0.4 < (y == 0).mean() < 0.6
    assert not np.array_equal(drop(x).numpy(), y)  # a new mask every call
    drop.eval()
    np.testing.assert_array_equal(drop(x).numpy(), np.ones((50, 40)))


def test_containers_name_parameters_by_path():
    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU(),
                          nn.ModuleList([nn.Linear(3, 3), nn.LayerNorm(3)]))
    names = [n for n, _ in model.named_parameters()]
    assert names == ["0.weight", "0.bias", "2.0.weight", "2.0.bias", "2.1.weight", "2.1.bias"]
    assert len(list(model.parameters())) == 6 and len(model) == 3
    assert isinstance(model[0].weight, nn.Parameter) and not isinstance(
        af.tensor([1.0]), nn.Parameter)
    model.eval()
    assert not any(m.training for m in model.modules())


def test_state_dict_round_trip_and_strict_errors():
    af.manual_seed(1)
    a = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
    af.manual_seed(2)
    b = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
    sd = a.state_dict()
    assert list(sd) == ["0.weight", "0.bias", "1.weight", "1.bias"]
    w_before = b[0].weight
    b.load_state_dict(sd)
    assert b[0].weight is w_before  # the same parameter object, new values
    for k in sd:
        np.testing.assert_array_equal(b.state_dict()[k].numpy(), sd[k].numpy())
    b.load_state_dict({k: v.numpy() for k, v in sd.items()})  # arrays work too
    with pytest.raises(UsageError, match=r"missing keys \['1.bias'\]"):
        b.load_state_dict({k: v for k, v in sd.items() if k != "1.bias"})
    with pytest.raises(UsageError, match="has shape"):
        b.load_state_dict({**sd, "0.bias": np.zeros(5, np.float32)})


def test_module_to_device_keeps_parameters_and_gradients_flow():
    af.manual_seed(0)
    lin = nn.Linear(3, 2)
    w = lin.weight
    lin.to("cuda")
    assert lin.weight is w and str(w.device) == "cuda:0"
    x = af.tensor(np.ones((4, 3), np.float32), device="cuda")
    lin(x).sum().backward()
    np.testing.assert_allclose(lin.weight.grad.cpu().numpy(), np.full((2, 3), 4.0))
    np.testing.assert_allclose(lin.bias.grad.cpu().numpy(), [4.0, 4.0])


def test_losses_against_numpy():
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((6, 4)).astype(np.float32)
    t = np.array([0, 3, 1, 1, 2, -100])
    ce = nn.CrossEntropyLoss()(af.tensor(logits), af.tensor(t)).numpy()
    lse = np.log(np.exp(logits).sum(1))
    ref = (lse - logits[np.arange(6), np.maximum(t, 0)])[:5].mean()
    np.testing.assert_allclose(ce, ref, rtol=1e-6)
    a, b = rng.standard_normal((3, 2)), rng.standard_normal((3, 2))
    np.testing.assert_allclose(nn.MSELoss()(af.tensor(a), af.tensor(b)).numpy(),
                               ((a - b) ** 2).mean())
    np.testing.assert_allclose(nn.MSELoss("sum")(af.tensor(a), af.tensor(b)).numpy(),
                               ((a - b) ** 2).sum())
