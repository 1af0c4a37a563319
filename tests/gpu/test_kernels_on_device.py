"""Every op kernel, written once against ``ctx.xp``, gives numpy's numbers on the device.

Each case of the CPU op table (tests/kernels/test_ops.py) runs again with device inputs,
device outputs preallocated from the inferred descs, and ``ctx.xp`` the device's array
module; the kernel must write in place and match the numpy run.  Random numbers are drawn
on the host with numpy's generator and copied over, so ``random_normal`` and variable
initialisers give *exactly* numpy's numbers on any device.
"""

from __future__ import annotations

import numpy as np
import pytest

from actorflow.kernels import KernelContext, get_op, op_types
from actorflow.plan.model import BlobDesc
from tests.kernels.test_ops import CASES, run_op

# exp/tanh/matmul may round differently on a GPU and it reduces in another order: the
# emulated device (numpy) is held to the same tolerances, so what passes here passes there
TOLERANCE = {"float16": (1e-3, 1e-3), "float32": (1e-5, 1e-6), "float64": (1e-12, 1e-12)}


def assert_device_close(got: np.ndarray, want: np.ndarray) -> None:
    """Equal dtypes; floats within a GPU's rounding, everything else exact."""
    assert got.dtype == want.dtype
    rtol, atol = TOLERANCE.get(want.dtype.name, (0.0, 0.0))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def run_on_device(xp, op_type: str, ins: dict, attrs: dict, piece: int = 0,
                  ctx: KernelContext | None = None) -> dict[str, np.ndarray]:
    op = get_op(op_type)
    descs = {k: BlobDesc(v.shape, v.dtype.name) for k, v in ins.items()}
    inferred = op.infer_checked(op_type, descs, attrs)
    dev_ins = {k: xp.asarray(v) for k, v in ins.items()}
    outs = {k: xp.full(d.shape, 123, d.dtype) for k, d in inferred.items()}
    before = {k: id(v) for k, v in outs.items()}
    ctx = ctx or KernelContext(xp, piece, 0, op_type)
    ctx.piece_id = piece
    op.kernel(ctx, dev_ins, outs, attrs)
    assert {k: id(v) for k, v in outs.items()} == before, f"{op_type} replaced its output"
    got = {}
    for k, v in outs.items():
        assert isinstance(v, xp.ndarray), f"{op_type} output left the device"
        got[k] = xp.asnumpy(v)
    return got


@pytest.mark.parametrize("op_type", sorted(CASES))
def test_op_on_device_equals_numpy(xp, op_type):
    ins, attrs, _ = CASES[op_type]
    want = run_op(op_type, ins, attrs)
    got = run_on_device(xp, op_type, ins, attrs)
    for k in want:
        assert_device_close(got[k], want[k])


def test_every_registered_op_runs_on_the_device(xp):
    """Ops outside the CPU table: the parallel ops, stamp, random_normal."""
    extra = {
        "random_normal": ({}, {"shape": [4, 3], "seed": 11, "mean": 1.0, "std": 2.0}),
        "box_slice": ({"in": np.arange(12.0).reshape(3, 4)}, {"begin": [1, 0], "end": [3, 2]}),
        "variable_part": ({}, {"logical_shape": [4, 6], "begin": [0, 2], "end": [4, 4],
                               "init": "normal", "seed": 3}),
        "const_array": ({}, {"shape": [2, 2], "dtype": "float32", "value": [1, 2, 3, 4]}),
        "stamp": ({}, {"shape": [3], "dtype": "int64"}),
    }
    builtin = {t for t in op_types() if not t.startswith("test_")}  # not tests' own ops
    assert builtin <= set(CASES) | set(extra) | MODEL_IO
    for op_type, (ins, attrs) in extra.items():
        for piece in (0, 5):
            want = run_op(op_type, ins, attrs, piece=piece)
            got = run_on_device(xp, op_type, ins, attrs, piece=piece)
            np.testing.assert_array_equal(got["out"], want["out"])  # exact, even random ones


def test_random_draws_equal_numpy_exactly(xp):
    """Drawn on the host with numpy's generator, then copied: the same bits on a GPU."""
    attrs = {"shape": [64, 33], "seed": 7, "mean": 0.5, "std": 3.0}
    got = run_on_device(xp, "random_normal", {}, attrs, piece=9)["out"]
    want = (np.random.default_rng([7, 9]).standard_normal((64, 33)) * 3.0 + 0.5)
    np.testing.assert_array_equal(got, want.astype(np.float32))
    ctx = KernelContext(xp, 0, 0, "w")
    v = run_on_device(xp, "variable", {}, {"shape": [5, 2], "init": "normal", "seed": 4,
                                           "std": 0.1}, ctx=ctx)["out"]
    np.testing.assert_array_equal(
        v, (np.random.default_rng(4).standard_normal((5, 2)) * 0.1).astype(np.float32))
    assert isinstance(ctx.state["value"], xp.ndarray)  # the variable lives on the device


MODEL_IO = {"assign", "variable_save", "variable_load"}  # tested below (state and files)


def test_assign_and_model_io_on_the_device(xp, tmp_path):
    """A variable part written by assign, saved from the device and loaded back onto it."""
    from actorflow.kernels.checkpoint import encode_path

    part = {"logical_shape": [4, 6], "begin": [0, 2], "end": [4, 4], "init": "zeros"}
    ctx = KernelContext(xp, 0, 0, "w")  # one state, shared by the part's ops as at run time
    value = np.arange(8, dtype=np.float32).reshape(4, 2)
    got = run_on_device(xp, "assign", {"ref": np.zeros((4, 2), np.float32), "value": value},
                        {"variable": part}, ctx=ctx)["out"]
    np.testing.assert_array_equal(got, value)
    assert isinstance(ctx.state["value"], xp.ndarray)  # the part stays on the device
    path = encode_path(tmp_path)
    saved = run_on_device(xp, "variable_save", {"ref": value, "path": path},
                          {"file": "w/part0.npy"}, ctx=ctx)["out"]
    assert saved[0] == value.nbytes
    np.testing.assert_array_equal(np.load(tmp_path / "w" / "part0.npy"), value)
