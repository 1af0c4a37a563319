"""Every built-in op against plain numpy, through its op definition (infer + kernel).

Each kernel is run the way an actor runs it: outputs are preallocated from the inferred
BlobDesc and the kernel must write into exactly those arrays (same object, same memory).
"""

from __future__ import annotations

import numpy as np
import pytest

from actorflow.errors import OpError, RegistryError, UnknownOpError
from actorflow.kernels import KernelContext, get_op, op_types, register_op
from actorflow.plan.model import BlobDesc

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4)).astype(np.float32)
B = RNG.standard_normal((3, 4)).astype(np.float32)
ROW = RNG.standard_normal((4,)).astype(np.float32)
POS = (np.abs(A) + 0.5).astype(np.float32)
M = RNG.standard_normal((4, 5)).astype(np.float64)
I = np.arange(12, dtype=np.int64).reshape(3, 4)


def run_op(op_type: str, ins: dict, attrs: dict | None = None, piece: int = 0,
           ctx: KernelContext | None = None) -> dict[str, np.ndarray]:
    """Infer, preallocate, run; assert the kernel wrote in place.  Returns the outputs."""
    attrs = attrs or {}
    op = get_op(op_type)
    descs = {k: BlobDesc(v.shape, v.dtype.name) for k, v in ins.items()}
    inferred = op.infer_checked(op_type, descs, attrs)
    outs = {k: np.full(d.shape, 123, d.dtype) for k, d in inferred.items()}
    before = {k: (id(v), v.__array_interface__["data"][0]) for k, v in outs.items()}
    ctx = ctx or KernelContext(np, piece, 0, op_type)
    ctx.piece_id = piece
    op.kernel(ctx, ins, outs, attrs)
    for k, v in outs.items():
        assert (id(v), v.__array_interface__["data"][0]) == before[k], f"{op_type} reallocated"
        assert v.shape == inferred[k].shape and v.dtype == np.dtype(inferred[k].dtype)
    return outs


CASES = {
    "identity": ({"in": A}, {}, lambda: A),
    "relu": ({"in": A}, {}, lambda: np.maximum(A, 0)),
    "neg": ({"in": A}, {}, lambda: -A),
    "exp": ({"in": A}, {}, lambda: np.exp(A)),
    "tanh": ({"in": A}, {}, lambda: np.tanh(A)),
    "add": ({"a": A, "b": ROW}, {}, lambda: A + ROW),
    "sub": ({"a": A, "b": B}, {}, lambda: A - B),
    "mul": ({"a": A, "b": B}, {}, lambda: A * B),
    "div": ({"a": A, "b": POS}, {}, lambda: A / POS),
    "pow": ({"a": POS, "b": B}, {}, lambda: POS ** B),
    "maximum": ({"a": A, "b": B}, {}, lambda: np.maximum(A, B)),
    "minimum": ({"a": A, "b": B}, {}, lambda: np.minimum(A, B)),
    "scalar_add": ({"in": A}, {"scalar": 2.5}, lambda: A + 2.5),
    "scalar_sub": ({"in": A}, {"scalar": 2.5}, lambda: A - 2.5),
    "scalar_rsub": ({"in": A}, {"scalar": 2.5}, lambda: 2.5 - A),
    "scalar_mul": ({"in": A}, {"scalar": -3.0}, lambda: A * -3.0),
    "scalar_div": ({"in": A}, {"scalar": 4.0}, lambda: A / 4.0),
    "scalar_rdiv": ({"in": POS}, {"scalar": 4.0}, lambda: 4.0 / POS),
    "scalar_pow": ({"in": POS}, {"scalar": 3}, lambda: POS ** 3),
    "scalar_rpow": ({"in": A}, {"scalar": 2.0}, lambda: 2.0 ** A),
    "add_n": ({"in_0": A, "in_1": B, "in_2": A}, {}, lambda: A + B + A),
    "matmul": ({"a": A, "b": M}, {}, lambda: A @ M),
    "bias_add": ({"a": A, "b": ROW}, {}, lambda: A + ROW),
    "softmax": ({"in": A}, {"axis": 1},
                lambda: np.exp(A) / np.exp(A).sum(axis=1, keepdims=True)),
    "reduce_sum": ({"in": A}, {"axis": 0}, lambda: A.sum(axis=0)),
    "reduce_mean": ({"in": A}, {"axis": [0, 1], "keepdims": True},
                    lambda: A.mean(axis=(0, 1), keepdims=True)),
    "reshape": ({"in": A}, {"shape": [2, -1]}, lambda: A.reshape(2, 6)),
    "transpose": ({"in": A}, {}, lambda: A.T),
    "cast": ({"in": A}, {"dtype": "int32"}, lambda: A.astype(np.int32)),
    "concat": ({"in_0": A, "in_1": B}, {"axis": 1}, lambda: np.concatenate([A, B], axis=1)),
    "slice": ({"in": A}, {"axis": 1, "start": 1, "stop": 3}, lambda: A[:, 1:3]),
    "constant": ({}, {"shape": [2, 3], "value": 7.0}, lambda: np.full((2, 3), 7, np.float32)),
    "arange": ({}, {"start": 2, "stop": 11, "step": 3}, lambda: np.array([2, 5, 8])),
    "variable": ({}, {"shape": [3], "init": "normal", "seed": 4},
                 lambda: np.random.default_rng(4).standard_normal(3).astype(np.float32)),
    "sleep": ({"in": A}, {"ms": 1}, lambda: A),
    "busy": ({"in": A}, {"iters": 2, "size": 64}, lambda: A),
    "fail": ({"in": A}, {"piece": 5}, lambda: A),  # only raises on piece 5
}

FOUNDATION_OPS = {
    "identity", "relu", "add", "sub", "mul", "div", "pow", "matmul", "bias_add", "softmax",
    "reduce_sum", "reduce_mean", "reshape", "transpose", "cast", "concat", "slice", "constant",
    "arange", "random_normal", "sleep", "busy",
}


def test_the_issue_ops_are_registered_and_covered_here():
    assert FOUNDATION_OPS <= set(op_types())
    assert FOUNDATION_OPS - {"random_normal"} <= set(CASES)


@pytest.mark.parametrize("op_type", sorted(CASES))
def test_op_matches_numpy(op_type):
    ins, attrs, want = CASES[op_type]
    out = run_op(op_type, ins, attrs)["out"]
    np.testing.assert_allclose(out, want(), rtol=1e-5, atol=1e-6)


def test_matmul_transposes_and_float64_result():
    out = run_op("matmul", {"a": A.T.copy(), "b": M.T.copy()},
                 {"transpose_a": True, "transpose_b": True})["out"]
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, A @ M, rtol=1e-6)


@pytest.mark.parametrize("axis, keepdims", [(None, False), (1, False), (-1, True), ([0], True)])
def test_reductions_over_axes(axis, keepdims):
    ax = tuple(axis) if isinstance(axis, list) else axis
    s = run_op("reduce_sum", {"in": I}, {"axis": axis, "keepdims": keepdims})["out"]
    m = run_op("reduce_mean", {"in": I * 1.0}, {"axis": axis, "keepdims": keepdims})["out"]
    np.testing.assert_array_equal(s, I.sum(axis=ax, keepdims=keepdims))
    assert s.dtype == np.int64 and m.dtype == np.float64
    np.testing.assert_allclose(m, I.mean(axis=ax, keepdims=keepdims))
    with pytest.raises(OpError, match="mean of floating types, not int"):  # as OneFlow
        run_op("reduce_mean", {"in": I}, {"axis": axis, "keepdims": keepdims})


def test_int_division_gives_float32():  # OneFlow's promotion (kernels/dtype.py)
    out = run_op("div", {"a": I, "b": I + 1})["out"]
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, I / (I + 1))


def test_transpose_with_perm_and_softmax_rows_sum_to_one():
    x = RNG.standard_normal((2, 3, 4))
    out = run_op("transpose", {"in": x}, {"perm": [1, 2, 0]})["out"]
    np.testing.assert_array_equal(out, x.transpose(1, 2, 0))
    sm = run_op("softmax", {"in": x}, {})["out"]
    np.testing.assert_allclose(sm.sum(axis=-1), 1.0)


def test_generators_shift_by_piece():
    c = run_op("constant", {}, {"shape": [2], "value": 1.0, "piece_scale": 10}, piece=3)["out"]
    np.testing.assert_array_equal(c, [31.0, 31.0])
    r = run_op("arange", {}, {"stop": 3, "piece_scale": 100}, piece=2)["out"]
    np.testing.assert_array_equal(r, [200, 201, 202])


def test_random_normal_is_reproducible_per_seed_and_piece():
    attrs = {"shape": [4, 3], "seed": 11, "mean": 1.0, "std": 2.0}
    p3 = run_op("random_normal", {}, attrs, piece=3)["out"]
    again = run_op("random_normal", {}, attrs, piece=3)["out"]
    p4 = run_op("random_normal", {}, attrs, piece=4)["out"]
    other_seed = run_op("random_normal", {}, {**attrs, "seed": 12}, piece=3)["out"]
    np.testing.assert_array_equal(p3, again)
    assert not np.array_equal(p3, p4) and not np.array_equal(p3, other_seed)
    want = np.random.default_rng([11, 3]).standard_normal((4, 3)) * 2.0 + 1.0
    np.testing.assert_allclose(p3, want.astype(np.float32))
    assert p3.dtype == np.float32
    with pytest.raises(OpError, match="random_normal makes floats, not int32"):
        run_op("random_normal", {}, {"shape": [2], "dtype": "int32"})


def test_variable_init_kinds_and_state_kept_across_pieces(tmp_path):
    z = run_op("variable", {}, {"shape": [2, 2]})["out"]
    np.testing.assert_array_equal(z, np.zeros((2, 2)))
    path = tmp_path / "w.npy"
    w = np.arange(6, dtype=np.float64).reshape(2, 3)
    np.save(path, w)
    ctx = KernelContext(np, 0, 0, "w")
    f = run_op("variable", {}, {"shape": [2, 3], "init": "file", "path": str(path)},
               ctx=ctx)["out"]
    np.testing.assert_array_equal(f, w)
    ctx.state["value"][0, 0] = 42.0  # the actor's copy: later pieces see updates
    f2 = run_op("variable", {}, {"shape": [2, 3], "init": "file", "path": str(path)},
                ctx=ctx, piece=1)["out"]
    assert f2[0, 0] == 42.0
    with pytest.raises(OpError, match=r"holds shape \(2, 3\), variable wants \(3,\)"):
        run_op("variable", {}, {"shape": [3], "init": "file", "path": str(path)})
    with pytest.raises(OpError, match="unknown init 'ones'"):
        run_op("variable", {}, {"shape": [3], "init": "ones"})


def test_sleep_sleeps_its_ms_and_only_piece_limits_it(monkeypatch):
    import actorflow.kernels.ops.testing as testing

    slept = []
    monkeypatch.setattr(testing.time, "sleep", slept.append)
    out = run_op("sleep", {"in": A}, {"ms": 30})["out"]
    np.testing.assert_array_equal(out, A)
    run_op("sleep", {"in": A}, {"ms": 500, "only_piece": 7}, piece=1)
    run_op("sleep", {"in": A}, {"ms": 500, "only_piece": 7}, piece=7)
    assert slept == [0.03, 0.5]


def test_fail_raises_on_its_piece():
    with pytest.raises(RuntimeError, match="boom"):
        run_op("fail", {"in": A}, {"piece": 2, "message": "boom"}, piece=2)


@pytest.mark.parametrize("op_type, ins, attrs, msg", [
    ("matmul", {"a": A, "b": A}, {}, r"op 'matmul' \(matmul\): inner dimensions differ"),
    ("add", {"a": A, "b": M}, {}, r"shapes \(3, 4\) and \(4, 5\) cannot be broadcast"),
    ("reshape", {"in": A}, {"shape": [5, -1]}, r"cannot reshape \(3, 4\) into \(5, -1\)"),
    ("transpose", {"in": A}, {"perm": [0, 0]}, "perm \\[0, 0\\] is not a permutation"),
    ("slice", {"in": A}, {"start": 2, "stop": 9}, r"slice \[2:9\] is out of range"),
    ("concat", {"in_0": A, "in_1": M}, {"axis": 0}, "inputs must agree on all axes but 0"),
    ("bias_add", {"a": A, "b": A}, {}, r"bias of shape \(3, 4\) does not fit"),
    ("relu", {"x": A}, {}, r"expected inputs \['in'\], got \['x'\]"),
    ("scalar_add", {"in": A}, {}, "bad attrs or inputs"),
    ("scalar_add", {"in": A}, {"scalar": "2"}, "attr 'scalar' must be a number"),
    ("cast", {"in": A}, {"dtype": "nope"}, "unknown dtype 'nope'"),
    ("reduce_sum", {"in": A}, {"axis": 3}, "axis 3 is out of range for a tensor of rank 2"),
])
def test_bad_shapes_and_attrs_name_the_op(op_type, ins, attrs, msg):
    with pytest.raises(OpError, match=msg):
        run_op(op_type, ins, attrs)


def test_unknown_op_type_lists_the_known_ones():
    with pytest.raises(UnknownOpError, match=r"unknown op type 'conv9d'; known: .*matmul"):
        get_op("conv9d")
    assert issubclass(UnknownOpError, OpError) and issubclass(UnknownOpError, RegistryError)


def test_an_op_type_registered_twice_is_refused():
    with pytest.raises(RegistryError, match="op type 'matmul' is registered twice"):
        register_op(get_op("matmul"))


def test_an_sbp_rule_registered_twice_is_refused():
    from actorflow.kernels.sbp import RULES, register_sbp, signatures

    with pytest.raises(RegistryError, match="SBP rule for op type 'matmul' is registered twice"):
        register_sbp("matmul", RULES.get("relu"))
    # the registered rule is still the matmul one: data-parallel a, split b, partial sums
    sigs = signatures("matmul", {"a": (4, 3), "b": (3, 2)}, (4, 2), {})
    assert sigs[:3] == [({"a": "S0", "b": "B"}, "S0"), ({"a": "B", "b": "S1"}, "S1"),
                        ({"a": "S1", "b": "S0"}, "P")]
