"""OneFlow's exception tests, ported (``python/oneflow/test/exceptions``, OneFlow 0.9.0): the
same built-in exception type, and OneFlow's words in the message (actorflow's messages add
which op, tensor or rank, and what to do)."""

from __future__ import annotations

import pytest

import actorflow as flow


@pytest.mark.parametrize("shape, words", [
    ((-2, 4), "Invalid shape dimension -2"),  # test_reshape.py
    ((-1, -1), "only one dimension can be inferred"),
])
def test_reshape_errors(shape, words):
    with pytest.raises(RuntimeError, match=words):
        flow.tensor((2, 2)).reshape(shape)


def test_reshape_invalid_size():
    with pytest.raises(RuntimeError, match="is invalid for input of size 24"):
        flow.arange(24).reshape(2, 3, 4).reshape((2, 3, 5))


def test_sbp_with_invalid_axis():  # test_local_global_convert_error.py
    with pytest.raises(RuntimeError, match="must be >= 0, got -1"):
        flow.sbp.split(-1)
    with pytest.raises(RuntimeError, match=r"less than the supported maximum axis \(6\), but "
                                           r"got 7"):
        flow.sbp.split(7)


def test_local_and_global_to_global_with_invalid_split_axis():
    words = r"Split axis out of range \(expected to be in range of \[0, 1\), but got 1!"
    with pytest.raises(RuntimeError, match=words):
        flow.tensor([1, 2, 3, 4]).to_global(placement=flow.placement.all("cpu"),
                                            sbp=flow.sbp.split(1))
    x = flow.tensor([1, 2, 3, 4], placement=flow.placement.all("cpu"), sbp=flow.sbp.broadcast)
    with pytest.raises(RuntimeError, match=words):
        x.to_global(sbp=flow.sbp.split(1))


def test_multi_input_with_diff_device(emulated_device):  # test_multi_input_with_diff_...py
    x = flow.tensor([1, 2, 3, 4])
    y = flow.tensor([2, 4, 6, 8], device="cuda")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device, but "
                                           "found at least two devices"):
        flow.add(x, y)


def test_device_type():  # test_device.py
    with pytest.raises(RuntimeError, match=r"Expected one of (.*) device type at start of "
                                           r"device string: xpu"):
        flow.device("xpu")


def test_broadcast_shapes():  # test_binary_functor_exception.py (out of place here)
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of "
                                           r"tensor b \(4\) at non-singleton dimension 1"):
        flow.ones((2, 3)) + flow.ones((2, 4))


@pytest.mark.parametrize("call", [
    lambda x: flow.sum(x, dim=3),
    lambda x: x.transpose(0, 2),
    lambda x: flow.softmax(x, dim=2),
])
def test_dimension_out_of_range_is_an_index_error(call):
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of "
                                         r"\[-2, 1\], but got [23]\)"):
        call(flow.ones(2, 3))


def test_size_of_a_missing_dim_is_a_runtime_error():
    with pytest.raises(RuntimeError, match=r"Dimension out of range \(expected to be in range "
                                           r"of \[-2, 1\], but got 2\)"):
        flow.ones(2, 3).size(2)


def test_index_out_of_range():
    with pytest.raises(IndexError):
        flow.tensor([[1, 2, 3], [4, 5, 6]])[2]


def test_argument_types():  # seed 004 and OneFlow's functional signature errors
    with pytest.raises(TypeError, match=r"relu\(\): argument 'x' must be tensor, not int"):
        flow.relu(1)
    with pytest.raises(TypeError, match=r"pow\(\): received an invalid combination of "
                                        r"arguments\. The valid signatures are:\n\t\*0: Tensor "
                                        r"\(Tensor input, Tensor exponent\)"):
        flow.pow(flow.ones(2), "a")


def test_mismatched_shapes_in_ops_are_runtime_errors():
    with pytest.raises(RuntimeError, match="inner dimensions differ"):
        flow.matmul(flow.ones(2, 3), flow.ones(2, 3))
    with pytest.raises(RuntimeError, match="must agree on all axes but 0"):
        flow.cat([flow.ones(2, 3), flow.ones(3, 2)])
    with pytest.raises(RuntimeError, match="number of dims don't match in permute"):
        flow.ones(2, 3).permute(0)
    with pytest.raises(RuntimeError, match="Can only calculate the mean of floating types"):
        flow.tensor([1, 2]).mean()


def test_arange_errors():
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        flow.arange(0, 1, 0)
    with pytest.raises(RuntimeError, match="upper bound and larger bound inconsistent with "
                                           "step sign"):
        flow.arange(1, 0, 1)


def test_errors_keep_their_actorflow_names():
    with pytest.raises(flow.errors.OpError) as e:
        flow.ones((2, 3)) + flow.ones((2, 4))
    assert isinstance(e.value, RuntimeError) and isinstance(e.value, flow.errors.InputError)
    assert issubclass(flow.errors.DimensionError, IndexError)
    assert issubclass(flow.errors.UsageError, ValueError)
    assert issubclass(flow.errors.ConsistencyError, RuntimeError)
    assert issubclass(flow.errors.ArgumentTypeError, TypeError)
