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
from tests.kernels.op_table import RNG, TABLE, A, I, M
from tests.kernels.reference import REFS


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


# (inputs, attrs, expected) of every op with a fixed example (tests/kernels/op_table.py);
# tests/gpu runs the same cases on the device
CASES = {op: (c.ins, c.attrs, c.want) for op, c in TABLE.items() if c.compare != "stateful"}

FOUNDATION_OPS = {
    "identity", "relu", "add", "sub", "mul", "div", "pow", "matmul", "bias_add", "softmax",
    "reduce_sum", "reduce_mean", "reshape", "transpose", "cast", "concat", "slice", "constant",
    "arange", "random_normal", "sleep", "busy",
}


def test_the_issue_ops_are_registered_and_covered_here():
    assert FOUNDATION_OPS <= set(op_types())
    assert FOUNDATION_OPS <= set(CASES)


def test_every_registered_op_has_a_case_and_a_reference():
    """A new op is added to tests/kernels/op_table.py (and reference.py) or this fails."""
    builtin = {t for t in op_types() if not t.startswith("test_")}  # not tests' own ops
    assert sorted(builtin - set(TABLE)) == []
    assert sorted(set(TABLE) - builtin) == []  # no case for an op that is gone
    assert sorted(t for t, c in TABLE.items() if c.compare != "stateful" and t not in REFS) == []


@pytest.mark.parametrize("op_type", sorted(CASES))
def test_op_matches_numpy(op_type):
    case = TABLE[op_type]
    out = run_op(op_type, case.ins, case.attrs, piece=case.piece)["out"]
    want = case.want()
    assert out.dtype == want.dtype and out.shape == want.shape
    if case.compare == "first":  # only element 0 is written (the piece id)
        out, want = out.reshape(-1)[:1], want.reshape(-1)[:1]
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)


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
