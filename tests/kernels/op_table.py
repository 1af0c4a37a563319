"""The one table of op cases: every registered op, by op type.

Each ``OpCase`` holds one fixed example (inputs, attrs, piece) that the plain op tests and
the device tests run, and the numpy reference it is checked against
(``tests/kernels/reference.py``).  A new op is added here, in one place; the tests fail
for a registered op that has no case.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tests.kernels.reference import REFS

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4)).astype(np.float32)
B = RNG.standard_normal((3, 4)).astype(np.float32)
ROW = RNG.standard_normal((4,)).astype(np.float32)
COL = RNG.standard_normal((3,)).astype(np.float32)
POS = (np.abs(A) + 0.5).astype(np.float32)
M = RNG.standard_normal((4, 5)).astype(np.float64)
I = np.arange(12, dtype=np.int64).reshape(3, 4)
MASK = A > 0
# a row far from 0: softmax/log_softmax/cross_entropy overflow unless they subtract the max
BIG = np.array([[1000.0, 0.0, -3.0, 2.0], [-1000.0, -998.0, -999.0, -1002.0],
                [1.0, 2.0, 3.0, 4.0]], np.float32)
TARGET = np.array([0, 3, 1], np.int64)
BATCH_A = RNG.standard_normal((2, 3, 4)).astype(np.float32)
BATCH_B = RNG.standard_normal((1, 4, 5)).astype(np.float32)


@dataclass(frozen=True)
class OpCase:
    """An op's fixed example and how its output is compared with the reference."""

    op: str
    ins: dict[str, np.ndarray]
    attrs: dict[str, Any] = field(default_factory=dict)
    piece: int = 0
    # "all": every element; "first": only element 0 is specified (stamp); "stateful": the
    # op reads/writes files or shared state (tested by name in tests/gpu and tests/kernels)
    compare: str = "all"

    def want(self, piece: int | None = None) -> np.ndarray:
        return REFS[self.op](self.ins, self.attrs, self.piece if piece is None else piece)


def _cases(*cases: OpCase) -> dict[str, OpCase]:
    table: dict[str, OpCase] = {}
    for c in cases:
        assert c.op not in table, f"two cases for {c.op}"
        table[c.op] = c
    return table


C = OpCase
_LR = {"kind": "warmup", "warmup_factor": 0.1, "warmup_iters": 4, "method": "linear",
       "after": {"kind": "cosine", "base_lr": 0.5, "T_max": 10, "eta_min": 0.01}}

TABLE: dict[str, OpCase] = _cases(
    # element-wise unary
    C("identity", {"in": A}), C("relu", {"in": A}), C("neg", {"in": A}), C("exp", {"in": A}),
    C("tanh", {"in": A}), C("log", {"in": POS}), C("sqrt", {"in": POS}),
    C("rsqrt", {"in": POS}), C("sigmoid", {"in": BIG}), C("silu", {"in": BIG}),
    C("gelu", {"in": A * 3}), C("softplus", {"in": BIG}, {"beta": 2.0, "threshold": 10.0}),
    C("abs", {"in": A}), C("sign", {"in": np.array([-2.0, 0.0, 3.0], np.float32)}),
    C("clip", {"in": A}, {"min": -0.5, "max": 0.25}), C("fill_like", {"in": I}, {"value": 7}),
    C("logical_not", {"in": MASK}),
    # binary, broadcasting
    C("add", {"a": A, "b": ROW}), C("sub", {"a": A, "b": B}), C("mul", {"a": A, "b": B}),
    C("div", {"a": A, "b": POS}), C("pow", {"a": POS, "b": B}),
    C("maximum", {"a": A, "b": B}), C("minimum", {"a": A, "b": B}),
    C("add_n", {"in_0": A, "in_1": B, "in_2": A}),
    C("eq", {"a": I, "b": I[:, ::-1].copy()}), C("ne", {"a": I, "b": I[:, ::-1].copy()}),
    C("lt", {"a": A, "b": B}), C("le", {"a": I, "b": np.full((1, 4), 5)}),
    C("gt", {"a": A, "b": ROW}), C("ge", {"a": I, "b": np.array([3, 6, 1, 9])}),
    C("logical_and", {"a": MASK, "b": B > 0}), C("logical_or", {"a": MASK, "b": B > 0}),
    C("logical_xor", {"a": MASK, "b": B > 0}),
    C("where", {"cond": MASK, "x": A, "y": ROW}),
    C("where_scalar_x", {"cond": MASK, "y": A}, {"x": 2.5}),
    C("where_scalar_y", {"cond": MASK, "x": I}, {"y": -1}),
    C("masked_fill", {"in": A, "mask": ROW > 0}, {"value": -9.0}),
    C("relu_grad", {"dy": B, "y": np.maximum(A, 0)}),
    C("gelu_grad", {"dy": B, "x": A * 3}),
    # tensor and scalar
    C("scalar_add", {"in": A}, {"scalar": 2.5}), C("scalar_sub", {"in": A}, {"scalar": 2.5}),
    C("scalar_rsub", {"in": A}, {"scalar": 2.5}), C("scalar_mul", {"in": A}, {"scalar": -3.0}),
    C("scalar_div", {"in": A}, {"scalar": 4.0}), C("scalar_rdiv", {"in": POS}, {"scalar": 4.0}),
    C("scalar_pow", {"in": POS}, {"scalar": 3}), C("scalar_rpow", {"in": A}, {"scalar": 2.0}),
    C("scalar_eq", {"in": I}, {"scalar": 5}), C("scalar_ne", {"in": I}, {"scalar": 5}),
    C("scalar_lt", {"in": A}, {"scalar": 0.1}), C("scalar_le", {"in": I}, {"scalar": 5}),
    C("scalar_gt", {"in": A}, {"scalar": -0.2}), C("scalar_ge", {"in": I}, {"scalar": 7.5}),
    C("scalar_logical_and", {"in": MASK}, {"scalar": True}),
    C("scalar_logical_or", {"in": MASK}, {"scalar": False}),
    C("scalar_logical_xor", {"in": MASK}, {"scalar": True}),
    # linear algebra, reductions, normalisation
    C("matmul", {"a": A, "b": M}), C("batch_matmul", {"a": BATCH_A, "b": BATCH_B}),
    C("bias_add", {"a": A, "b": COL}, {"axis": 0}),
    C("softmax", {"in": BIG}, {"axis": 1}), C("log_softmax", {"in": BIG}, {"axis": -1}),
    C("reduce_sum", {"in": A}, {"axis": 0}),
    C("reduce_mean", {"in": A}, {"axis": [0, 1], "keepdims": True}),
    C("reduce_max", {"in": A}, {"axis": 1}), C("reduce_min", {"in": A}, {"axis": [0],
                                                                            "keepdims": True}),
    C("argmax", {"in": A}, {"axis": 1}), C("argmin", {"in": A}, {"axis": 0, "keepdims": True}),
    C("layer_norm", {"in": BATCH_A}, {"normalized_ndim": 2, "eps": 1e-5}),
    C("layer_norm_grad", {"dy": BATCH_A[::-1].copy(), "x": BATCH_A}, {"normalized_ndim": 1}),
    C("cross_entropy", {"logits": BIG, "target": TARGET}),
    C("cross_entropy_grad", {"dy": COL, "logits": BIG, "target": np.array([0, -100, 2])},
      {"ignore_index": -100}),
    # layout, indexing
    C("reshape", {"in": A}, {"shape": [2, -1]}), C("transpose", {"in": A}),
    C("cast", {"in": A * 10}, {"dtype": "int32"}),
    C("concat", {"in_0": A, "in_1": B}, {"axis": 1}),
    C("slice", {"in": A}, {"axis": 1, "start": 1, "stop": 3}),
    C("strided_slice", {"in": BATCH_A}, {"begin": [0, 1, 0], "end": [2, 3, 4],
                                         "step": [1, 1, 2]}),
    C("strided_slice_grad", {"dy": A[:2, ::2].copy()}, {"shape": [3, 4], "begin": [1, 0],
                                                        "end": [3, 4], "step": [1, 2]}),
    C("box_slice", {"in": np.arange(12.0).reshape(3, 4)}, {"begin": [1, 0], "end": [3, 2]}),
    C("broadcast_to", {"in": ROW}, {"shape": [2, 3, 4]}),
    C("gather", {"in": A, "index": np.array([[2, 0], [-1, 1]])}),
    C("gather_grad", {"dy": RNG.standard_normal((2, 2, 4)).astype(np.float32),
                      "index": np.array([[2, 0], [2, 1]])}, {"num": 3}),
    C("one_hot", {"in": np.array([[0, 2], [1, 1]])}, {"num_classes": 3}),
    C("microbatch_slice", {"in": np.arange(24.0).reshape(6, 4)}, {"num": 3}),
    C("microbatch_place", {"in": A}, {"num": 2}),
    # random by design: the documented seed rule
    C("dropout", {"in": A}, {"p": 0.4, "seed": 3}),
    C("dropout_grad", {"dy": B}, {"p": 0.25, "seed": 9}),
    # generators, state
    C("constant", {}, {"shape": [2, 3], "value": 7.0}),
    C("arange", {}, {"start": 2, "stop": 11, "step": 3}),
    C("random_normal", {}, {"shape": [4, 3], "seed": 11, "mean": 1.0, "std": 2.0}),
    C("variable", {}, {"shape": [3], "init": "normal", "seed": 4}),
    C("variable_part", {}, {"logical_shape": [4, 6], "begin": [0, 2], "end": [4, 4],
                            "init": "normal", "seed": 3}),
    C("const_array", {}, {"shape": [2, 2], "dtype": "float32", "value": [1, 2, 3, 4]}),
    C("learning_rate", {"step": np.array([2], np.int64)}, {"spec": _LR}),
    C("assign", {"ref": np.zeros((4, 2), np.float32),
                 "value": np.arange(8, dtype=np.float32).reshape(4, 2)},
      {"variable": {"logical_shape": [4, 6], "begin": [0, 2], "end": [4, 4], "init": "zeros"}}),
    C("stamp", {}, {"shape": [3], "dtype": "int64"}, piece=0, compare="first"),
    C("variable_save", {}, compare="stateful"), C("variable_load", {}, compare="stateful"),
    # tests' and benchmarks' ops: they pass their input through
    C("sleep", {"in": A}, {"ms": 1}), C("busy", {"in": A}, {"iters": 2, "size": 64}),
    C("fail", {"in": A}, {"piece": 5}),  # only raises on piece 5
)
