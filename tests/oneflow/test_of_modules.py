"""OneFlow 0.9.0's tensor and module results, recorded by the oracle and compared here
(ported from OneFlow's ``python/oneflow/test/{modules,tensor}``: add/sub/mul/div with
broadcasting, pow, matmul 2-D and batched, sum/mean over dims, reshape/view/transpose/
permute, cat, softmax and activations, casts, constants, indexing, comparisons, where).

``oracle/modules.json`` holds what OneFlow 0.9.0 (CPU) returned for each expression below,
written by ``oracle/record.py`` (which needs OneFlow; these tests do not).  The same
expression text runs here with ``import actorflow as flow``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import actorflow as flow

ORACLE = json.loads((Path(__file__).parent / "oracle" / "modules.json").read_text())


def _inputs() -> dict:
    return {
        "a": flow.tensor([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]]),
        "b": flow.tensor([[0.5], [2.0]]),
        "i": flow.tensor([[1, 2, 3], [4, 5, 6]]),
        "f12": flow.arange(12, dtype=flow.float32),
        "f6": flow.arange(6, dtype=flow.float32),
    }


CASES = {
    "add_bcast": lambda a, b, i, f12, f6: a + b,
    "sub_bcast": lambda a, b, i, f12, f6: a - b,
    "mul_bcast": lambda a, b, i, f12, f6: a * b,
    "div_bcast": lambda a, b, i, f12, f6: a / b,
    "rsub": lambda a, b, i, f12, f6: 1 - a,
    "rdiv": lambda a, b, i, f12, f6: 2 / b,
    "pow_t": lambda a, b, i, f12, f6: flow.pow(b, flow.tensor([[2.0], [3.0]])),
    "rpow": lambda a, b, i, f12, f6: 2 ** b,
    "int_floordivlike": lambda a, b, i, f12, f6: i / 2,
    "matmul2": lambda a, b, i, f12, f6: (
        flow.matmul(a, flow.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))),
    "matmul3": lambda a, b, i, f12, f6: flow.matmul(f12.reshape(2, 2, 3), f6.reshape(3, 2)),
    "bmm": lambda a, b, i, f12, f6: flow.matmul(f12.reshape(2, 2, 3), f12.reshape(2, 3, 2)),
    "matmul_int": lambda a, b, i, f12, f6: flow.matmul(i, flow.tensor([[1], [1], [1]])),
    "sum_all": lambda a, b, i, f12, f6: a.sum(),
    "sum_d1": lambda a, b, i, f12, f6: a.sum(dim=1),
    "sum_d0_keep": lambda a, b, i, f12, f6: flow.sum(a, dim=0, keepdim=True),
    "sum_neg": lambda a, b, i, f12, f6: a.sum(-1),
    "sum_tuple": lambda a, b, i, f12, f6: a.sum((0, 1)),
    "mean_d1": lambda a, b, i, f12, f6: a.mean(1),
    "isum": lambda a, b, i, f12, f6: i.sum(0),
    "reshape_m1": lambda a, b, i, f12, f6: i.reshape(-1, 2),
    "reshape_list": lambda a, b, i, f12, f6: flow.reshape(i, [3, 2]),
    "view": lambda a, b, i, f12, f6: i.view(6),
    "transpose": lambda a, b, i, f12, f6: i.transpose(0, 1),
    "transpose_neg": lambda a, b, i, f12, f6: flow.transpose(i, -1, -2),
    "permute3": lambda a, b, i, f12, f6: flow.arange(24).reshape(2, 3, 4).permute(2, 0, 1)[1],
    "cat0": lambda a, b, i, f12, f6: flow.cat([i, i], dim=0),
    "cat1": lambda a, b, i, f12, f6: flow.cat([i, i * 2], 1),
    "cat_neg": lambda a, b, i, f12, f6: flow.cat([a, a], dim=-1),
    "softmax": lambda a, b, i, f12, f6: flow.softmax(a, dim=1),
    "softmax0": lambda a, b, i, f12, f6: a.softmax(0),
    "relu": lambda a, b, i, f12, f6: flow.relu(a),
    "tanh": lambda a, b, i, f12, f6: flow.tanh(a),
    "exp": lambda a, b, i, f12, f6: flow.exp(b),
    "neg": lambda a, b, i, f12, f6: -a,
    "maximum": lambda a, b, i, f12, f6: flow.maximum(a, flow.zeros(2, 3)),
    "minimum": lambda a, b, i, f12, f6: flow.minimum(a, b),
    "full": lambda a, b, i, f12, f6: flow.full((2, 2), 3.5),
    "zeros_i": lambda a, b, i, f12, f6: flow.zeros(2, 3, dtype=flow.int32),
    "ones_like_shape": lambda a, b, i, f12, f6: flow.ones((2, 1)),
    "cast": lambda a, b, i, f12, f6: a.to(flow.int32),
    "cast2": lambda a, b, i, f12, f6: flow.cast(a, flow.int64),
    "long": lambda a, b, i, f12, f6: a.long(),
    "T": lambda a, b, i, f12, f6: a.T,
    "numel": lambda a, b, i, f12, f6: flow.tensor(a.numel()),
    "idx0": lambda a, b, i, f12, f6: i[0],
    "idx_col": lambda a, b, i, f12, f6: i[:, 1],
    "idx_neg": lambda a, b, i, f12, f6: i[-1, -1],
    "idx_slice": lambda a, b, i, f12, f6: i[:, 1:3],
    "idx_step": lambda a, b, i, f12, f6: flow.arange(10)[1:8:3],
    "idx_none": lambda a, b, i, f12, f6: i[None],
    "idx_ellipsis": lambda a, b, i, f12, f6: i[..., 0],
    "idx_oob": lambda a, b, i, f12, f6: i[2],
    "unsqueeze": lambda a, b, i, f12, f6: i.unsqueeze(1),
    "squeeze": lambda a, b, i, f12, f6: flow.ones(1, 2, 1).squeeze(),
    "flatten": lambda a, b, i, f12, f6: flow.arange(8).reshape(2, 2, 2).flatten(),
    "sum_oob": lambda a, b, i, f12, f6: a.sum(dim=2),
    "tensor_0d": lambda a, b, i, f12, f6: flow.tensor(3.5),
    "add_0d": lambda a, b, i, f12, f6: flow.tensor(3) + flow.tensor([1, 2]),
    "eq": lambda a, b, i, f12, f6: flow.eq(i, 2),
    "gt": lambda a, b, i, f12, f6: i > 3,
    "where": lambda a, b, i, f12, f6: flow.where(i > 3, i, flow.zeros(2, 3, dtype=flow.int64)),
    "bool_add": lambda a, b, i, f12, f6: flow.tensor([True, False]) + flow.tensor([True, True]),
    "pow_scalar_int": lambda a, b, i, f12, f6: i ** 2,
    "pow_scalar_float": lambda a, b, i, f12, f6: i ** 0.5,
    "div_int_int": lambda a, b, i, f12, f6: flow.tensor([7, -7]) / flow.tensor([2, 2]),}


def _check(name: str) -> str | None:
    """None when the case gives OneFlow's result, else what differs."""
    want = ORACLE[name]
    if "err" in want:  # OneFlow raised: so does actorflow, with the same built-in type
        with pytest.raises(getattr(__builtins__, want["err"], None) or Exception):
            CASES[name](**_inputs())
        return None
    got = CASES[name](**_inputs())
    if str(got.dtype) != want["dtype"] or list(got.shape) != want["shape"]:
        return f"{name}: {got.dtype} {list(got.shape)}, OneFlow {want['dtype']} {want['shape']}"
    if not np.allclose(np.asarray(got.numpy(), dtype=np.float64),
                       np.asarray(want["v"], dtype=np.float64), rtol=1e-6, atol=1e-7):
        return f"{name}: {got.numpy().tolist()}, OneFlow {want['v']}"
    return None


def test_same_results_as_oneflow():
    """Every case in one test (one eager environment): the list names each difference."""
    differ = [d for d in map(_check, sorted(CASES)) if d is not None]
    assert not differ, "\n".join(differ)


def test_every_recorded_case_is_checked():
    assert set(CASES) == set(ORACLE)
