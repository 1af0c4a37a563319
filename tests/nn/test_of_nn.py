"""``nn`` modules against OneFlow 0.9.0 (what OneFlow's ``test_linear.py`` and
``test_module*.py`` check): ``Linear`` forward and backward with fixed weights (2-D and
3-D input, no bias, ``nn.init``), the modules the examples use (``Embedding``, ``LayerNorm``,
``Dropout``, activations, ``Sequential``/``ModuleList``/``ModuleDict``, the losses), and
``Module``'s behaviours: ``parameters()``, ``named_parameters``, ``state_dict`` names and
shapes, ``load_state_dict`` (and its errors), buffers, ``train``/``eval``, ``zero_grad``.

``tests/oneflow/oracle/of_nn.json`` holds what OneFlow gave for each ``case_*`` below;
``tests/oneflow/oracle/record_cases.py`` records it (needs OneFlow; these tests do not).
"""

from __future__ import annotations

import numpy as np
import pytest

import actorflow as flow
from actorflow.errors import UsageError
from tests.oneflow import oracle_cases

# --- cases (run by oracle/record_cases.py with flow = oneflow) ---
nn = flow.nn
X = [[0.5, -1.5, 2.0], [1.0, 0.25, -0.75]]
W = [[0.1, -0.2, 0.3], [0.5, 0.6, -0.7], [-0.9, 1.0, 1.1], [0.2, 0.4, -0.6]]
BIAS = [0.05, -0.1, 0.15, 0.2]
C4 = [[0.3, -1.2, 0.7, 1.5], [2.0, -0.4, 1.1, -0.8]]


def _x():
    return flow.tensor(X, requires_grad=True)


def _fixed_linear(bias=True):
    m = nn.Linear(3, 4, bias=bias)
    m.weight = nn.Parameter(flow.tensor(W))
    if bias:
        m.bias = nn.Parameter(flow.tensor(BIAS))
    return m


def _mlp():
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    m.load_state_dict({
        "0.weight": flow.tensor(W), "0.bias": flow.tensor(BIAS),
        "2.weight": flow.tensor([[0.5, -0.5, 1.0, 0.25], [-1.0, 0.75, 0.5, -0.25]]),
        "2.bias": flow.tensor([0.1, -0.2])})
    return m


def case_linear_forward_backward():
    m = _fixed_linear()
    x = _x()
    y = m(x)
    (y * flow.tensor(C4)).sum().backward()
    return {"y": y, "x": x.grad, "w": m.weight.grad, "b": m.bias.grad}


def case_linear_no_bias():
    m = _fixed_linear(bias=False)
    x = _x()
    y = m(x)
    (y * y).sum().backward()
    return {"y": y, "w": m.weight.grad, "bias_none": m.bias is None,
            "names": [n for n, _ in m.named_parameters()]}


def case_linear_3d_input():
    m = _fixed_linear()
    x = flow.tensor(np.arange(12, dtype=np.float32).reshape(2, 2, 3) / 4 - 1, requires_grad=True)
    y = m(x)
    (y * y).sum().backward()
    return {"y": y, "x": x.grad, "w": m.weight.grad, "b": m.bias.grad}


def case_linear_init_constant():
    m = nn.Linear(3, 4)
    nn.init.constant_(m.weight, 2.3)
    nn.init.constant_(m.bias, -0.5)
    y = m(flow.tensor(X))
    return {"y": y, "w_rg": m.weight.requires_grad, "w_leaf": m.weight.is_leaf}


def case_init_in_place():
    m = nn.Linear(3, 2)
    nn.init.zeros_(m.bias)
    nn.init.ones_(m.weight)
    r = nn.init.uniform_(nn.Linear(3, 2).weight, 2.0, 3.0)
    return {"w": m.weight, "b": m.bias, "y": m(flow.tensor(X)),
            "in_range": bool((r.min() >= 2.0).numpy()) and bool((r.max() <= 3.0).numpy())}


def case_linear_layout():
    m = nn.Linear(5, 7)
    return {"w": list(m.weight.shape), "b": list(m.bias.shape),
            "in": m.in_features, "out": m.out_features,
            "bound": bool((m.weight.abs().max() <= 1 / 5 ** 0.5).numpy())}


def case_sequential_mlp():
    m = _mlp()
    x = _x()
    y = m(x)
    loss = nn.CrossEntropyLoss()(y, flow.tensor([1, 0]))
    loss.backward()
    return {"y": y, "loss": loss, "x": x.grad, "w0": m[0].weight.grad, "b0": m[0].bias.grad,
            "w2": m[2].weight.grad, "b2": m[2].bias.grad}


def case_parameters_and_state_dict():
    m = _mlp()
    sd = m.state_dict()
    return {"names": [n for n, _ in m.named_parameters()],
            "shapes": [list(p.shape) for p in m.parameters()],
            "keys": list(sd.keys()), "sd_shapes": [list(v.shape) for v in sd.values()],
            "all_rg": all(p.requires_grad for p in m.parameters()),
            "sd_w2": sd["2.weight"]}


def case_nested_names():
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(3, 3)
            self.norm = nn.LayerNorm(3)
            self.layers = nn.ModuleList([nn.Linear(3, 2), nn.Linear(2, 3, bias=False)])
            self.heads = nn.ModuleDict({"a": nn.Linear(3, 1)})
            self.register_buffer("mask", flow.ones(2, 2))

    m = Block()
    return {"params": [n for n, _ in m.named_parameters()],
            "keys": list(m.state_dict().keys()),
            "modules": [n for n, _ in m.named_modules()],
            "children": [n for n, _ in m.named_children()],
            "buffers": [n for n, _ in m.named_buffers()]}


def case_load_state_dict_copies_values():
    a = _mlp()
    b = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    b.load_state_dict(a.state_dict())
    return {"y": b(flow.tensor(X)), "w0": b[0].weight}


def case_load_state_dict_missing_key():
    m = nn.Linear(3, 4)
    m.load_state_dict({"weight": flow.tensor(W)})
    return {"w": m.weight}


def case_load_state_dict_unexpected_key():
    m = nn.Linear(3, 4)
    m.load_state_dict({"weight": flow.tensor(W), "bias": flow.tensor(BIAS),
                       "extra": flow.tensor(BIAS)})
    return {"w": m.weight}


def case_load_state_dict_wrong_shape():
    m = nn.Linear(3, 4)
    m.load_state_dict({"weight": flow.tensor(X), "bias": flow.tensor(BIAS)})
    return {"w": m.weight}


def case_load_state_dict_not_strict():
    m = _fixed_linear()
    m.load_state_dict({"bias": flow.tensor([1.0, 2.0, 3.0, 4.0])}, strict=False)
    return {"w": m.weight, "b": m.bias}


def case_train_eval():
    m = nn.Sequential(nn.Linear(3, 4), nn.Dropout(0.5), nn.Sequential(nn.ReLU()))
    start = [s.training for s in m.modules()]
    r = m.eval()
    evald = [s.training for s in m.modules()]
    m.train()
    back = [s.training for s in m.modules()]
    m.train(False)
    return {"start": start, "eval": evald, "back": back, "same": r is m,
            "train_false": [s.training for s in m.modules()]}


def case_dropout_eval_is_identity():
    d = nn.Dropout(0.5)
    d.eval()
    x = _x()
    y = d(x)
    (y * 3).sum().backward()
    return {"y": y, "grad": x.grad}


def case_dropout_p0():
    d = nn.Dropout(0.0)
    return {"y": d(flow.tensor(X))}


def case_dropout_train_scales():
    d = nn.Dropout(0.5)
    y = d(flow.ones(64, 64))
    v = y.numpy()
    return {"values": sorted({float(e) for e in v.ravel()})}


def case_zero_grad():
    m = _fixed_linear()
    m(flow.tensor(X)).sum().backward()
    m.zero_grad()
    w = m.weight.grad
    m.zero_grad(set_to_none=True)
    return {"w": w, "b_none": m.bias.grad is None}


def case_requires_grad_module():
    m = _fixed_linear()
    m.requires_grad_(False)
    y = m(flow.tensor(X))
    return {"rg": [p.requires_grad for p in m.parameters()], "y_rg": y.requires_grad}


def case_embedding():
    e = nn.Embedding(4, 3)
    e.weight = nn.Parameter(flow.tensor(W))
    idx = flow.tensor([[0, 2], [2, 3]])
    y = e(idx)
    (y * y).sum().backward()
    return {"y": y, "w": e.weight.grad, "shape": list(e.weight.shape)}


def case_layer_norm():
    ln = nn.LayerNorm(3)
    ln.weight = nn.Parameter(flow.tensor([1.5, -0.5, 2.0]))
    ln.bias = nn.Parameter(flow.tensor([0.1, 0.2, -0.3]))
    x = _x()
    y = ln(x)
    (y * flow.tensor([[0.3, -1.2, 0.7], [2.0, -0.4, 1.1]])).sum().backward()
    return {"y": y, "x": x.grad, "w": ln.weight.grad, "b": ln.bias.grad,
            "names": [n for n, _ in ln.named_parameters()]}


def case_layer_norm_defaults():
    ln = nn.LayerNorm(3)
    return {"y": ln(flow.tensor(X)), "w": ln.weight, "b": ln.bias}


def _act(module):
    x = _x()
    y = module(x)
    (y * flow.tensor([[0.3, -1.2, 0.7], [2.0, -0.4, 1.1]])).sum().backward()
    return {"y": y, "grad": x.grad}


def case_relu_module():
    return _act(nn.ReLU())


def case_gelu_module():
    return _act(nn.GELU())


def case_silu_module():
    return _act(nn.SiLU())


def case_sigmoid_module():
    return _act(nn.Sigmoid())


def case_tanh_module():
    return _act(nn.Tanh())


def case_softmax_module():
    return _act(nn.Softmax(dim=1))


def case_identity_module():
    return _act(nn.Identity())


def case_cross_entropy_loss():
    x = _x()
    loss = nn.CrossEntropyLoss()(x, flow.tensor([2, 1]))
    loss.backward()
    return {"loss": loss, "grad": x.grad}


def case_cross_entropy_sum_none():
    x = flow.tensor(X)
    t = flow.tensor([0, 2])
    return {"sum": nn.CrossEntropyLoss(reduction="sum")(x, t),
            "none": nn.CrossEntropyLoss(reduction="none")(x, t)}


def case_cross_entropy_ignore_index():
    x = _x()
    loss = nn.CrossEntropyLoss(ignore_index=1)(x, flow.tensor([2, 1]))
    loss.backward()
    return {"loss": loss, "grad": x.grad}


def case_mse_loss():
    x = _x()
    t = flow.tensor([[1.5, 0.5, -1.0], [-2.0, 0.75, 1.25]])
    loss = nn.MSELoss()(x, t)
    loss.backward()
    return {"loss": loss, "grad": x.grad, "sum": nn.MSELoss(reduction="sum")(x, t),
            "none": nn.MSELoss(reduction="none")(x, t)}


def case_module_list_indexing():
    ml = nn.ModuleList([nn.ReLU(), nn.Tanh()])
    ml.append(nn.Sigmoid())
    return {"len": len(ml), "names": [type(m).__name__ for m in ml],
            "last": type(ml[-1]).__name__}


class _Pair(nn.Module):
    def __init__(self, param1, param2):
        super().__init__()
        self.param1 = param1
        self.param2 = param2


def case_shared_parameter_names():
    t0 = nn.Parameter(flow.tensor(X))
    t1 = nn.Parameter(flow.tensor(X) * 2)
    m = _Pair(t1, _Pair(t0, t1))
    params = list(m.parameters())
    return {"keys": list(m.state_dict().keys()), "n_params": len(params),
            "first_is_t1": params[0] is t1, "second_is_t0": params[1] is t0,
            "names": [n for n, _ in m.named_parameters()],
            "children": len(list(m.children())), "child": next(m.children()) is m.param2}


def case_load_state_dict_numpy():
    m = _Pair(nn.Parameter(flow.zeros(2, 3)), nn.Parameter(flow.zeros(3)))
    m.load_state_dict({"param1": np.ones((2, 3), dtype=np.float32),
                       "param2": np.arange(3, dtype=np.float32)})
    return {"p1": m.param1, "p2": m.param2, "rg": m.param1.requires_grad}


def case_module_forward_plain_values():
    class AddW(nn.Module):
        def __init__(self, w):
            super().__init__()
            self.w = w

        def forward(self, x):
            return x + self.w

    return {"a": AddW(5)(1), "b": AddW(4)(3)}


def case_bare_module_train_eval():
    m = nn.Module()
    first = m.training
    m.eval()
    return {"first": first, "after_eval": m.training}


def case_module_apply():
    seen = []
    net = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU(), nn.Tanh()))
    r = net.apply(lambda mod: seen.append(type(mod).__name__))
    return {"seen": seen, "same": r is net}


def case_parameter_is_parameter():
    p = nn.Parameter(flow.tensor(X))
    return {"isinstance": isinstance(p, nn.Parameter), "shape": list(p.shape),
            "rg": p.requires_grad, "leaf": p.is_leaf,
            "frozen_rg": nn.Parameter(flow.tensor(X), requires_grad=False).requires_grad,
            "plain": isinstance(flow.tensor(X), nn.Parameter)}


def case_setattr_registers_and_delattr():
    m = nn.Module()
    m.w = nn.Parameter(flow.tensor(X))
    m.sub = nn.Linear(2, 2)
    m.plain = flow.tensor(X)  # neither parameter nor module: not registered
    names = [n for n, _ in m.named_parameters()]
    del m.w
    return {"names": names, "after_del": [n for n, _ in m.named_parameters()],
            "keys": list(m.state_dict().keys())}


def case_register_parameter_none():
    m = nn.Module()
    m.register_parameter("bias", None)
    return {"bias_none": m.bias is None, "names": [n for n, _ in m.named_parameters()],
            "keys": list(m.state_dict().keys())}


def case_module_double_float():
    m = _Pair(nn.Parameter(flow.tensor(X)), nn.Parameter(flow.tensor(BIAS)))
    m = m.double()
    d = [v.dtype == flow.float64 for v in m.state_dict().values()]
    m = m.float()
    return {"double": d, "float": [v.dtype == flow.float32 for v in m.state_dict().values()],
            "p1": m.param1, "leaf": m.param1.is_leaf, "rg": m.param1.requires_grad}


def _grads_of_mlp():
    m = _mlp()
    loss = nn.CrossEntropyLoss()(m(flow.tensor(X) * 3), flow.tensor([1, 0]))
    loss.backward()
    return m


def case_clip_grad_norm():
    m = _grads_of_mlp()
    total = nn.utils.clip_grad_norm_(m.parameters(), max_norm=0.5)
    return {"total": total, "w0": m[0].weight.grad, "b2": m[2].bias.grad}


def case_clip_grad_norm_inf_and_order_1():
    m = _grads_of_mlp()
    inf = nn.utils.clip_grad_norm_(m.parameters(), max_norm=0.1, norm_type=float("inf"))
    w_inf = flow.tensor(m[0].weight.grad.numpy())
    one = nn.utils.clip_grad_norm_(m.parameters(), max_norm=0.2, norm_type=1.0)
    return {"inf": inf, "w_inf": w_inf, "one": one, "w_one": m[0].weight.grad}


def case_clip_grad_norm_below_max_keeps_grads():
    m = _grads_of_mlp()
    total = nn.utils.clip_grad_norm_(m.parameters(), max_norm=100.0)
    return {"total": total, "w0": m[0].weight.grad}


def case_clip_grad_norm_then_sgd():
    m = _grads_of_mlp()
    opt = flow.optim.SGD(m.parameters(), lr=0.5)
    nn.utils.clip_grad_norm_(m.parameters(), 0.25)
    opt.step()
    return {"w0": m[0].weight, "b2": m[2].bias}


def case_clip_grad_value():
    m = _grads_of_mlp()
    nn.utils.clip_grad_value_(m.parameters(), 0.05)
    return {"w0": m[0].weight.grad, "w2": m[2].weight.grad}


def case_clip_grad_norm_no_grads():
    m = _mlp()
    total = nn.utils.clip_grad_norm_(m.parameters(), 1.0)
    return {"total": total}
# --- end cases


ORACLE = oracle_cases.load(__file__)
DIFFERS: dict[str, tuple[type[BaseException], str]] = {}
# Where OneFlow raises: actorflow's error (and OneFlow's built-in type, checked too).
ERRORS: dict[str, tuple[type[BaseException], str]] = {
    "load_state_dict_missing_key": (UsageError, r"for Linear: missing keys \['bias'\]"),
    "load_state_dict_unexpected_key": (UsageError, r"unexpected keys \['extra'\]"),
    "load_state_dict_wrong_shape": (UsageError, r"'weight' has shape \(2, 3\).*\(4, 3\)"),
}


@pytest.mark.parametrize("name", sorted(ORACLE))
def test_same_as_oneflow(name):
    oracle_cases.check(name, globals()["case_" + name], ORACLE[name],
                       rtol=1e-5, atol=1e-6, differs=DIFFERS, errors=ERRORS)


def test_every_case_is_recorded():
    assert oracle_cases.case_names(globals()) == set(ORACLE)
