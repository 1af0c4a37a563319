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
from hypothesis import strategies as st

from tests.kernels import draws as d
from tests.kernels import magnitude as mg
from tests.kernels.draws import Example
from tests.kernels.reference import REFS
from tests.kernels.values import ALL, FLOATS, NUMBERS

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
    """An op's fixed example, its oracle strategy, and how it is called and compared."""

    op: str
    ins: dict[str, np.ndarray]
    attrs: dict[str, Any] = field(default_factory=dict)
    piece: int = 0
    # "all": every element; "first": only element 0 is specified (stamp); "stateful": the
    # op reads/writes files or shared state (tested by name in tests/gpu and tests/kernels)
    compare: str = "all"
    draw: Any = None  # a strategy of draws.Example (None: the fixed example only)
    # the public call: api(F, tensors by input name, attrs) -> tensor; RAW: the op expression
    # itself (ops with no functional name); None: not run eagerly nor in jobs
    api: Any = None
    tier: str = "exact"  # tolerance tier (compare.TIERS)
    mag: Any = None  # mag(example, want) -> the magnitude the tolerance is relative to
    eager: bool = True  # runs eagerly (False: it keeps state across calls, or has no meaning)
    job: bool = True  # runs in a job
    job_draw: Any = None  # what a job draws, where it differs from ``draw``

    def want(self, piece: int | None = None) -> np.ndarray:
        return REFS[self.op](self.ins, self.attrs, self.piece if piece is None else piece)

    def example(self) -> Example:
        return Example(self.ins, self.attrs, self.piece)


RAW = "raw"


def _cases(*cases: OpCase) -> dict[str, OpCase]:
    table: dict[str, OpCase] = {}
    for c in cases:
        assert c.op not in table, f"two cases for {c.op}"
        table[c.op] = c
    return table


C = OpCase
_LR = {"kind": "warmup", "warmup_factor": 0.1, "warmup_iters": 4, "method": "linear",
       "after": {"kind": "cosine", "base_lr": 0.5, "T_max": 10, "eta_min": 0.01}}


def _fn(name: str, *attr_names: str, **attr_kw: str) -> Any:
    """The public call ``F.<name>(*inputs in the op's order, *attrs, **attrs)``."""
    def api(F: Any, t: dict, a: dict) -> Any:
        return getattr(F, name)(*t.values(), *(a[n] for n in attr_names),
                                **{k: a[v] for k, v in attr_kw.items()})
    return api


def _scalar_call(name: str, reverse: bool = False) -> Any:
    def api(F: Any, t: dict, a: dict) -> Any:
        f = getattr(F, name)
        return f(a["scalar"], t["in"]) if reverse else f(t["in"], a["scalar"])
    return api


def _getitem(F: Any, t: dict, a: dict) -> Any:
    return F.getitem(t["in"], tuple(slice(b, e, s) for b, e, s in zip(a["begin"], a["end"],
                                                                     a["step"])))


def _reduce(name: str) -> Any:
    def api(F: Any, t: dict, a: dict) -> Any:
        axis = a["axis"]
        dim = None if axis is None else [axis] if isinstance(axis, int) else axis
        return getattr(F, name)(t["in"], dim, a["keepdims"])
    return api


_UNARY_FLOAT = ("exp", "tanh", "log", "sqrt")

TABLE: dict[str, OpCase] = _cases(
    # element-wise unary (ints and bools give float32 where the function is floating)
    *[C(op, {"in": POS if op in ("log", "sqrt") else A}, draw=d.unary(), api=_fn(op),
        tier="transcendental") for op in _UNARY_FLOAT],
    C("rsqrt", {"in": POS}, draw=d.unary(), api=_fn("rsqrt"), tier="composite"),
    C("sigmoid", {"in": BIG}, draw=d.unary(), api=_fn("sigmoid"), tier="composite"),
    C("silu", {"in": BIG}, draw=d.unary(), api=_fn("silu"), tier="composite"),
    C("gelu", {"in": A * 3}, draw=d.unary(attrs=st.fixed_dictionaries(
        {"approximate": st.sampled_from(["none", "tanh"])})), api=_fn("gelu", "approximate"),
      tier="composite", mag=mg.erf_fit("in")),
    C("softplus", {"in": BIG}, {"beta": 2.0, "threshold": 10.0}, draw=d.unary(
        attrs=st.fixed_dictionaries({"beta": st.sampled_from([1.0, 2.0, 0.5]),
                                     "threshold": st.sampled_from([20.0, 1.0, 5.0])})),
      api=_fn("softplus", "beta", "threshold"), tier="composite"),
    C("identity", {"in": A}, draw=d.unary(), api=_fn("identity")),
    C("relu", {"in": A}, draw=d.unary(), api=_fn("relu")),
    C("neg", {"in": A}, draw=d.unary(NUMBERS), api=_fn("neg")),
    C("abs", {"in": A}, draw=d.unary(), api=_fn("abs")),
    C("sign", {"in": np.array([-2.0, 0.0, 3.0], np.float32)}, draw=d.unary(), api=_fn("sign")),
    C("clip", {"in": A}, {"min": -0.5, "max": 0.25}, draw=d.clip(), api=_fn("clip", "min", "max")),
    C("fill_like", {"in": I}, {"value": 7}, draw=d.fill_like(), api=_fn("fill_like", "value")),
    C("logical_not", {"in": MASK}, draw=d.unary(), api=_fn("logical_not")),
    # binary, broadcasting
    C("add", {"a": A, "b": ROW}, draw=d.binary(), api=_fn("add"), tier="arith"),
    C("sub", {"a": A, "b": B}, draw=d.binary(no_bool_pair=True), api=_fn("sub"), tier="arith"),
    C("mul", {"a": A, "b": B}, draw=d.binary(), api=_fn("mul"), tier="arith"),
    C("div", {"a": A, "b": POS}, draw=d.binary(), api=_fn("div"), tier="arith"),
    C("pow", {"a": POS, "b": B}, draw=d.binary(), api=_fn("pow"), tier="transcendental"),
    C("maximum", {"a": A, "b": B}, draw=d.binary(), api=_fn("maximum")),
    C("minimum", {"a": A, "b": B}, draw=d.binary(), api=_fn("minimum")),
    C("add_n", {"in_0": A, "in_1": B, "in_2": A}, draw=d.add_n(), api=RAW, tier="reduction",
      mag=mg.add_n),
    *[C(op, {"a": I, "b": I[:, ::-1].copy()}, draw=d.binary(), api=_fn(op))
      for op in ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
                 "logical_xor")],
    C("where", {"cond": MASK, "x": A, "y": ROW}, draw=d.where("tt"), api=_fn("where")),
    C("where_scalar_x", {"cond": MASK, "y": A}, {"x": 2.5}, draw=d.where("st"),
      api=lambda F, t, a: F.where(t["cond"], a["x"], t["y"])),
    C("where_scalar_y", {"cond": MASK, "x": I}, {"y": -1}, draw=d.where("ts"),
      api=lambda F, t, a: F.where(t["cond"], t["x"], a["y"])),
    C("masked_fill", {"in": A, "mask": ROW > 0}, {"value": -9.0}, draw=d.masked_fill(),
      api=_fn("masked_fill", "value")),
    C("relu_grad", {"dy": B, "y": np.maximum(A, 0)}, draw=d.relu_grad(), api=_fn("relu_grad")),
    C("gelu_grad", {"dy": B, "x": A * 3}, draw=d.gelu_grad(),
      api=_fn("gelu_grad", "approximate"), tier="composite", mag=mg.erf_fit("dy")),
    # tensor and scalar
    *[C(f"scalar_{op}", {"in": A}, {"scalar": 2.5}, draw=d.with_scalar(),
        api=_scalar_call(op), tier="arith") for op in ("add", "sub", "mul", "div")],
    C("scalar_rsub", {"in": A}, {"scalar": 2.5}, draw=d.with_scalar(),
      api=_scalar_call("sub", True), tier="arith"),
    C("scalar_rdiv", {"in": POS}, {"scalar": 4.0}, draw=d.with_scalar(),
      api=_scalar_call("div", True), tier="arith"),
    C("scalar_pow", {"in": POS}, {"scalar": 3}, draw=d.with_scalar(int_exponent=True),
      api=_scalar_call("pow"), tier="transcendental"),
    C("scalar_rpow", {"in": A}, {"scalar": 2.0}, draw=d.with_scalar(rpow=True),
      api=_scalar_call("pow", True), tier="transcendental"),
    *[C(f"scalar_{op}", {"in": I}, {"scalar": 5}, draw=d.with_scalar(), api=_scalar_call(op))
      for op in ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
                 "logical_xor")],
    # linear algebra, reductions, normalisation
    C("matmul", {"a": A, "b": M}, draw=d.matmul(batch=False),
      api=_fn("matmul", transpose_a="transpose_a", transpose_b="transpose_b"),
      tier="reduction", mag=mg.matmul),
    C("batch_matmul", {"a": BATCH_A, "b": BATCH_B}, draw=d.matmul(batch=True),
      api=_fn("matmul", transpose_a="transpose_a", transpose_b="transpose_b"),
      tier="reduction", mag=mg.matmul),
    C("bias_add", {"a": A, "b": COL}, {"axis": 0}, draw=d.bias_add(), api=_fn("bias_add", "axis"),
      tier="arith"),
    C("softmax", {"in": BIG}, {"axis": 1}, draw=d.along_axis(ALL), api=_fn("softmax", "axis"),
      tier="reduction", mag=mg.softmax),
    C("log_softmax", {"in": BIG}, {"axis": -1}, draw=d.along_axis(FLOATS),
      api=_fn("log_softmax", "axis"), tier="reduction", mag=mg.log_softmax),
    C("reduce_sum", {"in": A}, {"axis": 0}, draw=d.reduction(), api=_reduce("sum"),
      tier="reduction", mag=mg.reduce_sum),
    C("reduce_mean", {"in": A}, {"axis": [0, 1], "keepdims": True}, draw=d.reduction(FLOATS),
      api=_reduce("mean"), tier="reduction", mag=mg.reduce_mean),
    C("reduce_max", {"in": A}, {"axis": 1}, draw=d.reduction(nonempty=True), api=_reduce("amax")),
    C("reduce_min", {"in": A}, {"axis": [0], "keepdims": True}, draw=d.reduction(nonempty=True),
      api=_reduce("amin")),
    C("argmax", {"in": A}, {"axis": 1}, draw=d.reduction(many=False, nonempty=True),
      api=_fn("argmax", "axis", "keepdims")),
    C("argmin", {"in": A}, {"axis": 0, "keepdims": True},
      draw=d.reduction(many=False, nonempty=True),
      api=_fn("argmin", "axis", "keepdims")),
    C("layer_norm", {"in": BATCH_A}, {"normalized_ndim": 2, "eps": 1e-5},
      draw=d.layer_norm(grad=False), api=lambda F, t, a: F.layer_norm(
          t["in"], t["in"].shape[t["in"].ndim - a["normalized_ndim"]:], eps=a["eps"]),
      tier="reduction", mag=mg.layer_norm),
    C("layer_norm_grad", {"dy": BATCH_A[::-1].copy(), "x": BATCH_A}, {"normalized_ndim": 1},
      draw=d.layer_norm(grad=True), api=lambda F, t, a: F.layer_norm_grad(
          t["dy"], t["x"], a["normalized_ndim"], a.get("eps", 1e-5)),
      tier="reduction", mag=mg.layer_norm_grad),
    C("cross_entropy", {"logits": BIG, "target": TARGET}, draw=d.cross_entropy(grad=False),
      api=lambda F, t, a: F.cross_entropy(t["logits"], t["target"], reduction="none",
                                          ignore_index=a.get("ignore_index", -100)),
      tier="reduction", mag=mg.cross_entropy),
    C("cross_entropy_grad", {"dy": COL, "logits": BIG, "target": np.array([0, -100, 2])},
      {"ignore_index": -100}, draw=d.cross_entropy(grad=True),
      api=_fn("cross_entropy_grad", "ignore_index"), tier="reduction",
      mag=mg.cross_entropy_grad),
    # layout, indexing
    C("reshape", {"in": A}, {"shape": [2, -1]}, draw=d.reshape(), api=_fn("reshape", "shape")),
    C("transpose", {"in": A}, draw=d.transpose(), api=_fn("transpose", "perm")),
    C("cast", {"in": A * 10}, {"dtype": "int32"}, draw=d.cast(), api=_fn("cast", "dtype")),
    C("concat", {"in_0": A, "in_1": B}, {"axis": 1}, draw=d.concat(),
      api=lambda F, t, a: F.concat(list(t.values()), a["axis"])),
    C("slice", {"in": A}, {"axis": 1, "start": 1, "stop": 3}, draw=d.slice_(),
      api=lambda F, t, a: F.narrow(t["in"], a["axis"], a["start"], a["stop"] - a["start"])),
    C("strided_slice", {"in": BATCH_A}, {"begin": [0, 1, 0], "end": [2, 3, 4],
                                         "step": [1, 1, 2]}, draw=d.strided_slice(),
      api=_getitem),
    C("strided_slice_grad", {"dy": A[:2, ::2].copy()}, {"shape": [3, 4], "begin": [1, 0],
                                                        "end": [3, 4], "step": [1, 2]},
      draw=d.strided_slice_grad(), api=_fn("strided_slice_grad", "shape", "begin", "end",
                                           "step")),
    C("box_slice", {"in": np.arange(12.0).reshape(3, 4)}, {"begin": [1, 0], "end": [3, 2]},
      draw=d.strided_slice(box=True), api=RAW),
    C("broadcast_to", {"in": ROW}, {"shape": [2, 3, 4]}, draw=d.broadcast_to(),
      api=_fn("broadcast_to", "shape")),
    C("gather", {"in": A, "index": np.array([[2, 0], [-1, 1]])}, draw=d.gather(),
      api=_fn("index_select0")),
    C("gather_grad", {"dy": RNG.standard_normal((2, 2, 4)).astype(np.float32),
                      "index": np.array([[2, 0], [2, 1]])}, {"num": 3}, draw=d.gather_grad(),
      api=_fn("gather_grad", "num"), tier="reduction", mag=mg.gather_grad),
    C("one_hot", {"in": np.array([[0, 2], [1, 1]])}, {"num_classes": 3}, draw=d.one_hot(),
      api=_fn("one_hot", "num_classes")),
    C("microbatch_slice", {"in": np.arange(24.0).reshape(6, 4)}, {"num": 3}, piece=4,
      draw=d.microbatch(place=False), api=RAW),
    C("microbatch_place", {"in": A}, {"num": 2}, piece=3, draw=d.microbatch(place=True),
      api=RAW),
    # random by design: the documented seed rule
    C("dropout", {"in": A}, {"p": 0.4, "seed": 3}, draw=d.dropout("in"),
      api=lambda F, t, a: F.dropout(t["in"], a["p"], seed=a["seed"]), tier="arith"),
    C("dropout_grad", {"dy": B}, {"p": 0.25, "seed": 9}, draw=d.dropout("dy"),
      api=_fn("dropout_grad", "p", "seed"), tier="arith"),
    # generators, state
    C("constant", {}, {"shape": [2, 3], "value": 7.0}, draw=d.constant(), api=RAW,
      tier="arith"),
    C("arange", {}, {"start": 2, "stop": 11, "step": 3}, draw=d.arange(), api=RAW, tier="arith"),
    C("random_normal", {}, {"shape": [4, 3], "seed": 11, "mean": 1.0, "std": 2.0},
      draw=d.random_normal(), api=RAW),
    C("variable", {}, {"shape": [3], "init": "normal", "seed": 4}, draw=d.variable(part=False),
      api=RAW, eager=False),
    C("variable_part", {}, {"logical_shape": [4, 6], "begin": [0, 2], "end": [4, 4],
                            "init": "normal", "seed": 3}, draw=d.variable(part=True), api=RAW,
      eager=False, job_draw=d.variable(part=True, whole=True)),  # jobs: the compiler's parts
    C("const_array", {}, {"shape": [2, 2], "dtype": "float32", "value": [1, 2, 3, 4]},
      draw=d.const_array(), api=RAW),
    C("learning_rate", {"step": np.array([2], np.int64)}, {"spec": _LR}, draw=d.learning_rate(),
      api=_fn("learning_rate", "spec"), tier="arith"),
    C("assign", {"ref": np.zeros((4, 2), np.float32),
                 "value": np.arange(8, dtype=np.float32).reshape(4, 2)},
      {"variable": {"logical_shape": [4, 6], "begin": [0, 2], "end": [4, 4], "init": "zeros"}},
      draw=d.assign(), eager=False, job=False),  # in jobs: tests/test_job_session.py
    C("stamp", {}, {"shape": [3], "dtype": "int64"}, compare="first", draw=d.stamp(), api=RAW),
    C("variable_save", {}, compare="stateful"), C("variable_load", {}, compare="stateful"),
    # tests' and benchmarks' ops: they pass their input through
    C("sleep", {"in": A}, {"ms": 1}, draw=d.passthrough({"ms": 0}), api=RAW),
    C("busy", {"in": A}, {"iters": 2, "size": 64}, draw=d.passthrough({"iters": 1, "size": 8}),
      api=RAW),
    C("fail", {"in": A}, {"piece": 5}, draw=d.passthrough({"piece": 1000}), api=RAW),
)
