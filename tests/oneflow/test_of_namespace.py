"""OneFlow's namespace on ``import actorflow as flow`` (issue 21, item 1).

Expected values are OneFlow 0.9.0's, read from the oracle (``flow.__version__ ==
'0.9.0'``, CPU); the tests need no OneFlow.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import actorflow as flow
from actorflow.frontend.functional import OPS
from actorflow.frontend.namespace import ALIASES, ONEFLOW_TENSOR_METHODS, RESERVED


def test_every_functional_op_is_a_top_level_name_and_a_method_where_oneflow_has_one():
    names = OPS.names()
    assert {"add", "relu", "pow", "matmul", "sum", "concat", "permute"} <= set(names)
    x = flow.tensor([[1.0, -2.0], [3.0, 4.0]])
    for name in names:
        op = OPS.get(name)
        assert getattr(flow, name) is op, name
        assert getattr(flow.functional, name) is op, name
        if name in ONEFLOW_TENSOR_METHODS and name not in RESERVED:
            assert callable(getattr(x, name)), name
    for alias, target in ALIASES.items():
        assert getattr(flow, alias) is OPS.get(target)
    assert {*names, "cat", "float32", "long"} <= set(dir(flow))  # tab completion sees them
    # methods made from ops compute what the op computes
    assert x.relu().tolist() == flow.relu(x).tolist() == [[1.0, 0.0], [3.0, 4.0]]
    assert x.tanh().numpy() == pytest.approx(np.tanh(x.numpy()))
    assert x.sum().item() == 6.0 and x.mean().item() == 1.5
    assert flow.cat([x, x], dim=1).shape == (2, 4)


def test_an_op_declared_later_appears_with_no_other_edit(tmp_path):
    """A module ``frontend/functional_*.py`` written after this test (here: in a temporary
    package path) is loaded by the registry and exported as a name and a method."""
    code = textwrap.dedent("""
        import actorflow.frontend as pkg, sys, pathlib
        extra = pathlib.Path(sys.argv[1])
        (extra / "functional_probe.py").write_text(
            "from actorflow.frontend.functional import define, E\\n"
            "_e = E('neg', ('in',))\\n"
            "negated_twice = define('negated_twice', [('Tensor (Tensor x)', "
            "lambda x: _e({'in': _e({'in': x})}))], method=True)\\n")
        pkg.__path__.append(str(extra))
        import actorflow as flow
        t = flow.tensor([1.0, -2.0])
        assert flow.negated_twice(t).tolist() == [1.0, -2.0]
        assert t.negated_twice().tolist() == [1.0, -2.0]
        assert flow.functional.negated_twice is flow.negated_twice
        print("OK")
    """)
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "OK", r.stderr[-2000:]


def test_dtype_objects():
    assert flow.float32 is flow.float and flow.float64 is flow.double
    assert flow.int64 is flow.long and flow.int32 is flow.int and flow.float16 is flow.half
    assert repr(flow.float32) == "actorflow.float32" and flow.float32 == "float32"
    assert flow.tensor([1, 2, 3]).dtype is flow.int64
    assert flow.tensor([1.0]).dtype is flow.float32
    assert flow.tensor(np.array([1.0])).dtype is flow.float64
    assert flow.tensor([True]).dtype is flow.bool
    assert flow.Tensor([[1, 2, 3], [4, 5, 6]]).dtype is flow.float32
    assert flow.ones(2, dtype=flow.int32).dtype is flow.int32
    assert flow.float32.is_floating_point and not flow.int8.is_floating_point
    with pytest.raises(AttributeError, match="no attribute 'float128'"):
        flow.float128  # noqa: B018


def test_size():
    s = flow.Size([2, 3])
    assert s == (2, 3) and isinstance(s, tuple) and s.numel() == 6
    assert repr(s) == "actorflow.Size([2, 3])" and repr(s[1:]) == "actorflow.Size([3])"
    x = flow.tensor([[1, 2, 3], [4, 5, 6]])
    assert isinstance(x.shape, flow.Size) and x.size() == (2, 3)
    assert (x.size(1), x.size(-1), x.numel(), x.dim(), x.ndimension()) == (3, 3, 6, 2, 2)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range "
                                         r"of \[-2, 1\], but got 2\)"):
        x.size(2)


@pytest.mark.parametrize("args, kwargs, shape, values", [
    ((), {}, (0,), []),
    ((2, 3), {}, (2, 3), [[0.0] * 3] * 2),  # OneFlow: uninitialised; actorflow: zeros
    (((2, 3),), {}, (2,), [2.0, 3.0]),  # a tuple is data
    (([2, 3],), {}, (2,), [2.0, 3.0]),
    ((np.arange(3),), {}, (3,), [0.0, 1.0, 2.0]),
    ((2.5,), {}, (), 2.5),
])
def test_Tensor_constructor_as_oneflow(args, kwargs, shape, values):
    t = flow.Tensor(*args, **kwargs)
    assert isinstance(t, flow.Tensor) and t.dtype is flow.float32
    assert t.shape == shape and t.tolist() == values


def test_every_kind_of_tensor_is_an_af_Tensor():
    assert isinstance(flow.ones(2), flow.Tensor) and flow.is_tensor(flow.ones(2))
    assert not flow.is_tensor(np.ones(2))
    p = flow.placement("cpu", ranks=[0])
    g = flow.ones(2, placement=p, sbp=flow.sbp.broadcast)
    assert isinstance(g, flow.Tensor) and g.is_global and not g.is_local
    with flow.Job("j"):
        lazy = flow.input("x", (2,))
        assert isinstance(lazy, flow.Tensor) and lazy.is_lazy


def test_tensor_methods_of_oneflow():
    x = flow.tensor([[1, 2, 3], [4, 5, 6]])
    assert x.permute(1, 0).tolist() == [[1, 4], [2, 5], [3, 6]]
    assert x.permute([1, 0]).shape == (3, 2) and flow.permute(x, (1, 0)).shape == (3, 2)
    assert x.long().dtype is flow.int64 and x.float().dtype is flow.float32
    assert x.double().dtype is flow.float64 and x.int().dtype is flow.int32
    assert x.bool().tolist() == [[True] * 3] * 2 and x.half().dtype is flow.float16
    assert x.tolist() == [[1, 2, 3], [4, 5, 6]] and x.element_size() == 8
    assert not x.is_floating_point() and x.float().is_floating_point()
    assert x.view(3, 2).tolist() == [[1, 2], [3, 4], [5, 6]]
    assert x.t().shape == (3, 2) and x.T.shape == (3, 2)
    assert x.to_local() is x  # OneFlow raises here; docs/oneflow.md says why we do not


def test_arange_as_oneflow():
    a = flow.arange(2, 7, 1.5)
    assert a.dtype is flow.float32 and a.tolist() == [2.0, 3.5, 5.0, 6.5]
    assert flow.arange(5).tolist() == [0, 1, 2, 3, 4] and flow.arange(5).dtype is flow.int64
    assert flow.arange(end=5).tolist() == [0, 1, 2, 3, 4]
    assert flow.arange(1, 10, 3).tolist() == [1, 4, 7]
    assert flow.arange(10, 0, -3).tolist() == [10, 7, 4, 1]
    assert flow.arange(5, dtype=flow.float64).dtype is flow.float64
    f = flow.arange(0, 1, 0.3)
    assert f.dtype is flow.float32 and f.numpy() == pytest.approx([0.0, 0.3, 0.6, 0.9])
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        flow.arange(0, 1, 0)
    with pytest.raises(RuntimeError, match="inconsistent with step sign"):
        flow.arange(1, 0)


def test_full_takes_its_dtype_from_the_value():
    assert flow.full((5,), 5).dtype is flow.int64
    assert flow.full((5,), 5.0).dtype is flow.float32
    assert flow.full((5,), True).dtype is flow.bool
    assert flow.full((2,), 2.5, dtype=flow.int64).tolist() == [2, 2]


def test_placement_and_sbp_objects():
    p = flow.placement("cpu", ranks=[0, 1])
    assert repr(p) == 'actorflow.placement(type="cpu", ranks=[0, 1])'
    assert p.type == "cpu" and p is flow.placement(type="cpu", ranks=[0, 1])
    assert isinstance(p, flow.placement)
    assert flow.placement.all("cpu") is flow.placement("cpu", ranks=[0])  # one rank here
    b = flow.sbp.broadcast
    assert b() is b and flow.sbp.split(0)() is flow.sbp.split(0) and callable(b)
    assert repr(flow.sbp.split(0)) == "actorflow.sbp.split(dim=0)"
    assert repr(flow.sbp.partial_sum) == "actorflow.sbp.partial_sum"
    assert flow.sbp.split(5).axis == 5
    with pytest.raises(RuntimeError, match="must be >= 0, got -1"):
        flow.sbp.split(-1)
    with pytest.raises(RuntimeError, match=r"supported maximum axis \(6\), but got 7"):
        flow.sbp.split(7)
    with pytest.raises(RuntimeError, match="unknown device type 'xpu'"):
        flow.placement("xpu", ranks=[0])


def test_global_sbp_is_a_tuple():
    p = flow.placement("cpu", ranks=[0])
    g = flow.tensor([1.0, 2.0]).to_global(p, flow.sbp.broadcast)
    assert g.sbp == (flow.sbp.broadcast,) and isinstance(g.sbp, tuple)
    assert g.placement is p and g.to_local().tolist() == [1.0, 2.0]
    assert g.to_global(sbp=g.sbp).sbp == (flow.sbp.broadcast,)


def test_env_nn_functional_and_comm_names():
    assert (flow.env.get_rank(), flow.env.get_world_size()) == (0, 1)
    assert (flow.env.get_local_rank(), flow.env.get_node_size()) == (0, 1)
    x = flow.tensor([-1.0, 2.0])
    assert flow.nn.functional.relu(x).tolist() == [0.0, 2.0]
    assert flow.nn.functional.softmax(x, dim=0).numpy().sum() == pytest.approx(1.0)
    assert flow.nn.functional.permute is flow.permute  # every op, declared anywhere
    t = flow.tensor([1.0, 2.0])
    flow.comm.all_reduce(t)  # one rank: the sum is itself, in place
    assert t.tolist() == [1.0, 2.0]
    out: list = []
    flow.comm.all_gather(out, t)
    assert [o.tolist() for o in out] == [[1.0, 2.0]]
    flow.comm.barrier()
