"""Every differentiable op as a case for the gradient checks: how to draw its inputs (float64,
away from kinks) and how to call it.  ``CASES`` maps a name to a ``Case``; the checks in
``test_grad_fd.py`` and ``test_grad_graph.py`` run them all."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import actorflow.functional as F


@dataclass(frozen=True)
class Case:
    make: Callable[[np.random.Generator, int, int], list[np.ndarray]]  # rng, m, n -> inputs
    fn: Callable[..., Any]  # tensors -> tensor
    diff: tuple[int, ...] = (0,)  # which inputs get gradients
    op_types: tuple[str, ...] = ()  # the op types whose rule this case exercises
    rtol: float = 1e-5


def r(rng: np.random.Generator, *shape: int, lo: float = -2.0, hi: float = 2.0) -> np.ndarray:
    return rng.uniform(lo, hi, shape)


def away(rng: np.random.Generator, *shape: int, gap: float = 0.2) -> np.ndarray:
    """Uniform values with |x| >= gap (no kink of relu/abs/sign at the sample)."""
    x = rng.uniform(gap, 2.0, shape)
    return x * rng.choice([-1.0, 1.0], shape)


def distinct(rng: np.random.Generator, *shape: int) -> np.ndarray:
    """Values at least 0.05 apart (no tie for max/min/maximum at the sample)."""
    n = int(np.prod(shape))
    return (rng.permutation(n) * 0.1 - n * 0.05 + rng.uniform(0, 0.02, n)).reshape(shape)


def ints(rng: np.random.Generator, hi: int, *shape: int) -> np.ndarray:
    return rng.integers(0, hi, shape).astype(np.int64)


U = Case  # short alias for the table below
CASES: dict[str, Case] = {
    # element-wise unary
    "neg": U(lambda g, m, n: [r(g, m, n)], lambda x: -x, op_types=("neg",)),
    "exp": U(lambda g, m, n: [r(g, m, n)], F.exp, op_types=("exp",)),
    "tanh": U(lambda g, m, n: [r(g, m, n)], F.tanh, op_types=("tanh",)),
    "relu": U(lambda g, m, n: [away(g, m, n)], F.relu, op_types=("relu",)),
    "identity": U(lambda g, m, n: [r(g, m, n)], F.identity, op_types=("identity",)),
    "log": U(lambda g, m, n: [r(g, m, n, lo=0.3)], F.log, op_types=("log",)),
    "sqrt": U(lambda g, m, n: [r(g, m, n, lo=0.3)], F.sqrt, op_types=("sqrt",)),
    "rsqrt": U(lambda g, m, n: [r(g, m, n, lo=0.3)], F.rsqrt, op_types=("rsqrt",)),
    "sigmoid": U(lambda g, m, n: [r(g, m, n, lo=-6, hi=6)], F.sigmoid, op_types=("sigmoid",)),
    "gelu": U(lambda g, m, n: [r(g, m, n, lo=-3, hi=3)], F.gelu, op_types=("gelu",), rtol=3e-5),
    "gelu_tanh": U(lambda g, m, n: [r(g, m, n, lo=-3, hi=3)],
                   lambda x: F.gelu(x, approximate="tanh"), op_types=("gelu",)),
    "silu": U(lambda g, m, n: [r(g, m, n)], F.silu, op_types=("silu",)),
    "softplus": U(lambda g, m, n: [r(g, m, n, lo=-4, hi=4)], lambda x: F.softplus(x, beta=1.5),
                  op_types=("softplus",)),
    "abs": U(lambda g, m, n: [away(g, m, n)], F.abs, op_types=("abs",)),
    "clip": U(lambda g, m, n: [distinct(g, m, n) + 0.025], lambda x: F.clip(x, -0.3, 0.4),
              op_types=("clip",)),
    "cast": U(lambda g, m, n: [r(g, m, n)], lambda x: F.cast(x, "float64") * 2.0,
              op_types=("cast",)),
    # binary, with broadcasting
    "add": U(lambda g, m, n: [r(g, m, n), r(g, n)], lambda a, b: a + b, (0, 1), ("add",)),
    "sub": U(lambda g, m, n: [r(g, m, 1), r(g, m, n)], lambda a, b: a - b, (0, 1), ("sub",)),
    "mul": U(lambda g, m, n: [r(g, m, n), r(g, 1, n)], lambda a, b: a * b, (0, 1), ("mul",)),
    "div": U(lambda g, m, n: [r(g, m, n), r(g, n, lo=0.5)], lambda a, b: a / b, (0, 1),
             ("div",)),
    "pow": U(lambda g, m, n: [r(g, m, n, lo=0.5), r(g, m, n, lo=-1.0, hi=2.0)], F.pow, (0, 1),
             ("pow",)),
    "maximum": U(lambda g, m, n: list(distinct(g, 2, m, n)), F.maximum, (0, 1), ("maximum",)),
    "minimum": U(lambda g, m, n: list(distinct(g, 2, m, n)), F.minimum, (0, 1), ("minimum",)),
    "where": U(lambda g, m, n: [r(g, m, n), r(g, m, n), r(g, m, n)],
               lambda c, a, b: F.where(c > 0.0, a, b), (1, 2), ("where",)),
    "where_scalar": U(lambda g, m, n: [r(g, m, n)], lambda a: F.where(a > 0.5, a, 0.25) +
                      F.where(a < 0.0, -1.0, a), (0,), ("where_scalar_x", "where_scalar_y")),
    "masked_fill": U(lambda g, m, n: [r(g, m, n), r(g, 1, n)],
                     lambda a, c: F.masked_fill(a, c > 0.0, -3.0), (0,), ("masked_fill",)),
    # scalar forms
    "scalars": U(lambda g, m, n: [r(g, m, n, lo=0.5)],
                 lambda x: ((x + 1.5) * 2.0 - 0.5) / 3.0 + 2.0 / x + (3.0 - x) + x ** 2.5
                 + 1.7 ** x,
                 op_types=("scalar_add", "scalar_mul", "scalar_sub", "scalar_div", "scalar_rdiv",
                           "scalar_rsub", "scalar_pow", "scalar_rpow")),
    # linear algebra
    "matmul": U(lambda g, m, n: [r(g, m, n), r(g, n, 3)], lambda a, b: a @ b, (0, 1),
                ("matmul",)),
    "matmul_t": U(lambda g, m, n: [r(g, n, m), r(g, 3, n)],
                  lambda a, b: F.matmul(a, b, transpose_a=True, transpose_b=True), (0, 1),
                  ("matmul",)),
    "batch_matmul": U(lambda g, m, n: [r(g, 2, m, n), r(g, n, 3)], lambda a, b: a @ b, (0, 1),
                      ("batch_matmul",)),
    "batch_matmul_t": U(lambda g, m, n: [r(g, 2, m, n), r(g, 2, 3, n)],
                        lambda a, b: F.matmul(a, b, transpose_b=True), (0, 1), ("batch_matmul",)),
    "bias_add": U(lambda g, m, n: [r(g, m, n), r(g, n)], F.bias_add, (0, 1), ("bias_add",)),
    "softmax": U(lambda g, m, n: [r(g, m, n)], lambda x: F.softmax(x, 1), op_types=("softmax",)),
    "log_softmax": U(lambda g, m, n: [r(g, m, n)], lambda x: F.log_softmax(x, 0),
                     op_types=("log_softmax",)),
    # reductions
    "sum": U(lambda g, m, n: [r(g, m, n)], lambda x: F.sum(x, 0, True) * F.sum(x),
             op_types=("reduce_sum",)),
    "mean": U(lambda g, m, n: [r(g, m, n)], lambda x: F.mean(x, 1), op_types=("reduce_mean",)),
    "amax": U(lambda g, m, n: [distinct(g, m, n)], lambda x: F.amax(x, 1) + F.max(x),
              op_types=("reduce_max",)),
    "amin": U(lambda g, m, n: [distinct(g, m, n)], lambda x: F.min(x, 0)[0],
              op_types=("reduce_min",)),
    # layout
    "reshape": U(lambda g, m, n: [r(g, m, n)],
                 lambda x: F.reshape(x, [x.shape[1], x.shape[0]]) * 1.0,
                 op_types=("reshape",)),
    "transpose": U(lambda g, m, n: [r(g, 2, m, n)], lambda x: F.transpose(x, [2, 0, 1]),
                   op_types=("transpose",)),
    "concat": U(lambda g, m, n: [r(g, m, n), r(g, 2, n)], lambda a, b: F.concat([a, b], 0),
                (0, 1), ("concat",)),
    "stack_split": U(lambda g, m, n: [r(g, m, n), r(g, m, n)],
                     lambda a, b: F.stack([a, b], 1).reshape(-1)[1:] * 1.0, (0, 1),
                     ("concat", "reshape", "strided_slice")),
    "narrow": U(lambda g, m, n: [r(g, m, n + 1)], lambda x: F.narrow(x, 1, 1, x.shape[1] - 1) *
                F.chunk(x, 2, 1)[0].sum(), op_types=("slice",)),
    "getitem": U(lambda g, m, n: [r(g, m + 1, n, 3)], lambda x: x[1:, ..., 0] * 2.0 +
                 x[::2, None, :, 1].sum(), op_types=("strided_slice",)),
    "broadcast_to": U(lambda g, m, n: [r(g, 1, n)], lambda x: F.broadcast_to(x, [3, 2, x.shape[1]]),
                      op_types=("broadcast_to",)),
    "unsqueeze": U(lambda g, m, n: [r(g, m, n)], lambda x: F.flatten(F.squeeze(
        F.unsqueeze(x, 1), [1])), op_types=("reshape",)),
    # layers and losses
    "layer_norm": U(lambda g, m, n: [r(g, m, n + 1), r(g, n + 1), r(g, n + 1)],
                    lambda x, w, b: F.layer_norm(x, [x.shape[-1]], w, b), (0, 1, 2),
                    ("layer_norm",)),
    "layer_norm2": U(lambda g, m, n: [r(g, 2, m, n + 1)],
                     lambda x: F.layer_norm(x, list(x.shape[1:]), eps=1e-3), (0,), ("layer_norm",)),
    "cross_entropy": U(lambda g, m, n: [r(g, m, n + 1), ints(g, n + 1, m)],
                       lambda x, t: F.cross_entropy(x, t), (0,), ("cross_entropy",)),
    "cross_entropy_3d": U(lambda g, m, n: [r(g, 2, n + 1, m), ints(g, n + 1, 2, m)],
                          lambda x, t: F.cross_entropy(x, t, reduction="sum"), (0,),
                          ("cross_entropy",)),
    "embedding": U(lambda g, m, n: [ints(g, 5, m, n), r(g, 5, 3)],
                   lambda i, w: F.embedding(i, w), (1,), ("gather",)),
    "dropout": U(lambda g, m, n: [r(g, m, n)], lambda x: F.dropout(x, 0.4, seed=7),
                 op_types=("dropout",)),
}
