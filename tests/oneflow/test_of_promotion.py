"""OneFlow's type promotion, swept for every binary op, in eager and in jobs (issue 21).

The tables are OneFlow 0.9.0's result dtypes (CPU, tensors of shape (2,)), read from the
oracle.  ``*`` marks a pair OneFlow has no CPU kernel for (int8 with uint8; float16 in
maximum/minimum/pow): actorflow computes it, with the dtype the same rule gives.  ``!``
marks where actorflow departs on purpose: OneFlow's ``bool / bool`` is bool, a true
division is float32 here; and ``bool - bool`` (bool in OneFlow) is refused, as torch and
numpy refuse it (docs/oneflow.md).
"""

from __future__ import annotations

import numpy as np
import pytest

import actorflow as flow
from actorflow.frontend import functional as F

NAMES = {"b": "bool", "u8": "uint8", "i8": "int8", "i16": "int16", "i32": "int32",
         "i64": "int64", "f16": "float16", "f32": "float32", "f64": "float64"}
ORDER = ["b", "u8", "i8", "i32", "i64", "f16", "f32", "f64"]

ADD = """
    b   b    u8   i8   i32  i64  f16  f32  f64
    u8  u8   u8   i16* i32  i64  f16  f32  f64
    i8  i8   i16* i8   i32  i64  f16  f32  f64
    i32 i32  i32  i32  i32  i64  f16  f32  f64
    i64 i64  i64  i64  i64  i64  f16  f32  f64
    f16 f16  f16  f16  f16  f16  f16  f32  f64
    f32 f32  f32  f32  f32  f32  f32  f32  f64
    f64 f64  f64  f64  f64  f64  f64  f64  f64
"""
DIV = """
    b   f32! f32  f32  f32  f32  f16  f32  f64
    u8  f32  f32  f32  f32  f32  f16  f32  f64
    i8  f32  f32  f32  f32  f32  f16  f32  f64
    i32 f32  f32  f32  f32  f32  f16  f32  f64
    i64 f32  f32  f32  f32  f32  f16  f32  f64
    f16 f16  f16  f16  f16  f16  f16  f32  f64
    f32 f32  f32  f32  f32  f32  f32  f32  f64
    f64 f64  f64  f64  f64  f64  f64  f64  f64
"""


def table(text: str) -> dict[tuple[str, str], str]:
    out = {}
    for line in text.strip().splitlines():
        a, *row = line.split()
        for b, cell in zip(ORDER, row):
            out[NAMES[a], NAMES[b]] = NAMES[cell.rstrip("*!")]
    return out


# maximum/minimum/sub/mul follow add's table in OneFlow; pow of two tensors follows div's
OPS = {"add": ADD, "sub": ADD, "mul": ADD, "maximum": ADD, "minimum": ADD, "div": DIV,
       "pow": DIV}
NUMPY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "maximum": np.maximum,
         "minimum": np.minimum, "div": np.true_divide, "pow": np.power}


def _values(dtype: str, which: int) -> np.ndarray:
    if dtype == "bool":
        return np.array([True, which == 1])  # no zero divisor
    return np.array([1, 2] if which == 0 else [2, 1], dtype=dtype)


@pytest.mark.parametrize("op", sorted(OPS))
def test_tensor_tensor_promotion_in_eager_and_in_jobs(op):
    want = table(OPS[op])
    f = getattr(F, op)
    for (a, b), out in want.items():
        x, y = _values(a, 0), _values(b, 1)
        if op == "sub" and a == b == "bool":
            with pytest.raises(RuntimeError, match="subtraction of two bool tensors"):
                f(flow.tensor(x), flow.tensor(y))
            continue
        got = f(flow.tensor(x), flow.tensor(y))
        assert got.dtype == out, (op, a, b, got.dtype, out)
        ref = NUMPY[op](x.astype(np.float64), y.astype(np.float64)).astype(out)
        np.testing.assert_allclose(got.numpy().astype(np.float64), ref.astype(np.float64),
                                   rtol=1e-3, err_msg=f"{op} {a} {b}")
        with flow.Job(f"p_{op}_{a}_{b}"):  # the same rule when the op is traced
            lazy = f(flow.input("x", (2,), a), flow.input("y", (2,), b))
            assert lazy.dtype == out, (op, a, b, "job", lazy.dtype)


# a Python number beside a tensor: OneFlow 0.9.0's result dtypes (scalar on either side)
SCALAR = {  # tensor dtype -> (with int, with float); a bool number acts as an int
    "bool": ("int64", "float32"), "uint8": ("uint8", "float32"), "int8": ("int8", "float32"),
    "int32": ("int32", "float32"), "int64": ("int64", "float32"),
    "float16": ("float16", "float16"), "float32": ("float32", "float32"),
    "float64": ("float64", "float64"),
}


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "pow"])
def test_tensor_scalar_promotion(op):
    f = getattr(F, op)
    for dtype, (with_int, with_float) in SCALAR.items():
        t = flow.tensor(_values(dtype, 0))
        for number, out in ((2, with_int), (2.5, with_float)):
            if op == "div" and out not in ("float16", "float64"):
                out = "float32"  # true division (OneFlow: int64 / 2 is float32)
            for got in (f(t, number), f(number, t)):
                assert got.dtype == out, (op, dtype, number, got.dtype, out)
        with flow.Job(f"s_{op}_{dtype}"):
            assert f(flow.input("x", (2,), dtype), 2.5).dtype == with_float


def test_the_issues_examples():
    assert (flow.tensor([1, 2]) / flow.tensor([2, 4])).dtype is flow.float32
    assert (flow.tensor([1, 2]) + 2.5).dtype is flow.float32
    assert (flow.tensor([1, 2]) * 0.5).tolist() == [0.5, 1.0]
    assert (flow.tensor([1, 2], dtype=flow.int32) / 2).dtype is flow.float32
    assert (flow.tensor([True, False]) + 1).tolist() == [2, 1]
    assert (flow.ones(2, dtype=flow.int64) + flow.ones(2, dtype=flow.float16)).dtype is \
        flow.float16


def test_zero_dim_tensors_act_as_numbers():
    t = flow.tensor([1, 2])
    assert (t + flow.tensor(2.5)).dtype is flow.float32  # OneFlow: int64 (see docs)
    assert (flow.ones(2, dtype=flow.float16) + flow.tensor(2.5)).dtype is flow.float16
    assert (flow.tensor(1) + flow.tensor(2.5)).dtype is flow.float32


def test_unary_and_reduction_dtypes():
    i = flow.tensor([1, 2, 3])
    assert i.exp().dtype is flow.float32 and i.tanh().dtype is flow.float32
    assert i.relu().dtype is flow.int64
    assert flow.tensor([1, 2], dtype=flow.int32).sum().dtype is flow.int64
    assert flow.tensor([True, True, False]).sum().item() == 2
    with pytest.raises(RuntimeError, match="mean of floating types"):
        i.mean()


def test_a_compiled_job_computes_with_the_same_dtypes_as_eager():
    """The actors run the op definitions' kernels: a plan gives eager's dtypes and values."""
    with flow.Job("mixed") as job:
        i = flow.input("i", (2,), "int64")
        h = flow.input("h", (2,), "float16")
        flow.output("q", i / i)
        flow.output("s", i + h)
        flow.output("f", i * 0.5)
    feeds = {"i": np.array([3, 4], np.int64), "h": np.array([0.5, 0.25], np.float16)}
    with flow.Session(flow.compile(job), timeout=30) as s:
        got = s.run(feeds)
    eager = {"q": flow.tensor(feeds["i"]) / flow.tensor(feeds["i"]),
             "s": flow.tensor(feeds["i"]) + flow.tensor(feeds["h"]),
             "f": flow.tensor(feeds["i"]) * 0.5}
    for k, want in (("q", "float32"), ("s", "float16"), ("f", "float32")):
        assert got[k].dtype == want == eager[k].dtype, k
        np.testing.assert_array_equal(got[k], eager[k].numpy())
    assert got["s"].tolist() == [3.5, 4.25] and got["f"].tolist() == [1.5, 2.0]
