"""The failing cases of the kernel bugs the oracle found (issue 20) and of the two bugs the
issue seeded, each with what was wrong.  ``test_op_at_its_edges`` runs an op's cases first,
on every path (kernel and eager, CPU and device), before its random examples, so each fix
keeps its failing case."""

from __future__ import annotations

import numpy as np

from tests.kernels.draws import Example

F16, F32, F64 = np.float16, np.float32, np.float64


def _x(v, dtype=F32) -> dict:
    return {"in": np.asarray(v, dtype)}


REGRESSIONS: dict[str, list[tuple[str, Example]]] = {
    "exp": [("exp(True) was computed in float16 (numpy's loop for bool): 2.71875",
             Example(_x(True, bool))),
            ("exp of int8 was computed in float16", Example(_x([3, -7], np.int8)))],
    "tanh": [("tanh(True) was computed in float16", Example(_x(True, bool)))],
    "relu": [("relu of a bool tensor: numpy refused the int64 -> bool cast",
              Example(_x([True, False], bool)))],
    "sigmoid": [("sigmoid of bool: numpy has no bool negative", Example(_x(True, bool))),
                ("float16 was computed in float16", Example(_x([-17.0, 11.0], F16)))],
    "silu": [("silu of bool: numpy has no bool negative", Example(_x([True], bool)))],
    "sign": [("sign of bool: numpy has no bool loop", Example(_x([True, False], bool)))],
    "softmax": [("softmax of bool: numpy has no bool subtract", Example(_x([True], bool), {
        "axis": 0})),
                ("softmax over an empty axis: numpy's max of nothing", Example(
                    _x(np.zeros((2, 0))), {"axis": 1})),
                ("seeded (issue 20): [1000, 0] is NaN unless the max is subtracted", Example(
                    _x([[1000.0, 0.0]]), {"axis": -1}))],
    "log_softmax": [("log_softmax over an empty axis: numpy's max of nothing",
                     Example(_x(np.zeros(0), F16), {"axis": 0}))],
    "bias_add": [("seeded (issue 20): bias_add ignoring axis 0 of a 2-D input", Example(
        {"a": np.arange(6.0).reshape(2, 3), "b": np.array([10.0, 20.0])}, {"axis": 0}))],
    "softplus": [("float16 beta * x rounded to 0 crossed the threshold", Example(
        _x(6e-8, F16), {"beta": 0.5, "threshold": 1.0}))],
    "reduce_max": [("max of int8 gave int64", Example(_x([3, -2], np.int8), {
        "axis": 0, "keepdims": False})),
                   ("axis 0 of a 0-d tensor: numpy's AxisError", Example(_x(2.0), {
                       "axis": 0, "keepdims": True}))],
    "reduce_min": [("min of bool gave int64", Example(_x([True, False], bool), {"axis": -1,
                                                                        "keepdims": True}))],
    "reduce_sum": [("axis -1 of a 0-d tensor: numpy's AxisError", Example(_x(2.0), {
        "axis": -1, "keepdims": False})),
                   ("a float16 sum overflowed at 65504 in float16", Example(
                       _x([60000.0, 60000.0, -60000.0], F16), {"axis": 0, "keepdims": False}))],
    "reduce_mean": [("a float16 mean summed in float16 overflowed", Example(
        _x([0.0, -32752.0, -32768.0], F16), {"axis": None, "keepdims": False}))],
    "argmax": [("argmax over axis 0 of a 0-d tensor: numpy's AxisError", Example(
        _x(False, bool), {"axis": 0, "keepdims": False}))],
    "pow": [("int tensors to a negative int power: numpy's ValueError (OneFlow: float32)",
             Example({"a": np.array([2, 3], np.int8), "b": np.array([-1, 2], np.int8)})),
            ("computed in float64 by the eager path, not float32", Example(
                {"a": np.array([False]), "b": np.array(2.2250738585072014e-308)}))],
    "scalar_sub": [("uint8 tensor minus -1: numpy's OverflowError (OneFlow wraps)",
                    Example(_x(0, np.uint8), {"scalar": -1}))],
    "scalar_add": [("int8 tensor plus 300: numpy's OverflowError (OneFlow adds 44)",
                    Example(_x([100, -1], np.int8), {"scalar": 300}))],
    "scalar_rpow": [("0.0 ** bool gave int64 after 0 ** bool (eager plans keyed 0 == 0.0)",
                     Example(_x(False, bool), {"scalar": 0.0})),
                    ("-1.8e308 ** float16 0.5: the scalar is -inf in float16 and IEEE pow "
                     "gives inf (the reference's float64 numpy loop said nan)",
                     Example(_x(0.5, F16), {"scalar": -1.7976931348623157e+308}))],
    "scalar_le": [("float16 0 <= -7e-190 compared in float64 (OneFlow: -0.0, True)",
                   Example(_x(0.0, F16), {"scalar": -7.171180739223473e-190}))],
    "scalar_lt": [("int8 100 < 300 (OneFlow compares with 300 as int8: 44)",
                   Example(_x([100], np.int8), {"scalar": 300}))],
    "eq": [("int64 2**53+1 == float32 2**53 compared in float64 (OneFlow: float32)",
            Example({"a": np.array([2 ** 53 + 1]), "b": np.array([2.0 ** 53], F32)}))],
    "fill_like": [("int8 filled with 300: numpy's OverflowError (OneFlow: 44)",
                   Example(_x([1, 2], np.int8), {"value": 300}))],
    "gather_grad": [("an empty index: reshape of nothing", Example(
        {"dy": np.zeros((0, 0), F16), "index": np.zeros(0, np.int32)}, {"num": 1})),
                    ("inf in one row spread NaN to every row (0 * inf in the one-hot matmul)",
                     Example({"dy": np.array([[np.inf, 1.0], [2.0, 3.0]], F32),
                              "index": np.array([0, 1])}, {"num": 3}))],
    "relu_grad": [("NaN dy where y <= 0 gave NaN (dy * 0), not 0", Example(
        {"dy": np.array([np.nan, np.inf], F32), "y": np.array([0.0, -1.0], F32)}))],
    "gelu_grad": [("x = 1000 in float16: x**3 overflowed into 0 * inf = NaN", Example(
        {"dy": np.array(0.0, F16), "x": np.array(1000.0, F16)}, {"approximate": "tanh"})),
                  ("x = 1e300: x**2 overflowed into NaN", Example(
                      {"dy": np.array([1.0, 1.0]), "x": np.array([1e300, -1e300])},
                      {"approximate": "none"}))],
    "layer_norm": [("float16 (x - mean)**2 overflowed: [0, 1000] normalised to 0", Example(
        _x([0.0, 1000.0], F16), {"normalized_ndim": 1, "eps": 1e-5}))],
}
