"""The kernel oracle's cases through the user's API: eager tensors and compiled jobs, on the
CPU and on the CUDA device (``cuda_device``: the emulated one here).  Each op below is
called as a user calls it (``F.softmax(x, dim)``, ``F.sum(x, dim, keepdim)``, ``x @ w``
with transposes, a scalar on either side ...) on inputs the op's oracle record draws
(``oracle_math.py``, ``oracle_nn.py``: the dtype's edges, NaN and inf, empty and 0-d
shapes), and must give the record's stable reference (cast to the dtype the result has)
within a GPU's tolerance.  A job runs several drawn cases at once (one compile, one
session)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import actorflow as af
import actorflow.functional as F
from tests.kernels.oracle_base import compare
from tests.kernels.oracle_math import ORACLES as MATH
from tests.kernels.oracle_nn import ORACLES as NN

ORACLES = {**MATH, **NN}


def _axes(a: Any) -> Any:
    return None if a is None else ([a] if isinstance(a, int) else list(a))


def _scalar(fn: Callable[[Any, Any], Any], reverse: bool = False) -> Callable:
    return lambda t, a: fn(a["scalar"], t["in"]) if reverse else fn(t["in"], a["scalar"])


def _unary(fn: Callable[[Any], Any]) -> Callable:
    return lambda t, a: fn(t["in"])


# op type -> how a user calls it on tensors ``t`` (by the op's input names), attrs ``a``
API: dict[str, Callable[[dict, dict], Any]] = {
    "relu": _unary(F.relu), "neg": _unary(F.neg), "exp": _unary(F.exp), "tanh": _unary(F.tanh),
    "log": _unary(F.log), "sqrt": _unary(F.sqrt), "rsqrt": _unary(F.rsqrt),
    "sigmoid": _unary(F.sigmoid), "silu": _unary(F.silu), "abs": _unary(F.abs),
    "sign": _unary(F.sign),
    "gelu": lambda t, a: F.gelu(t["in"], a.get("approximate", "none")),
    "softplus": lambda t, a: F.softplus(t["in"], float(a.get("beta", 1.0)),
                                        float(a.get("threshold", 20.0))),
    "clip": lambda t, a: F.clip(t["in"], a.get("min"), a.get("max")),
    "add": lambda t, a: F.add(t["a"], t["b"]), "sub": lambda t, a: F.sub(t["a"], t["b"]),
    "mul": lambda t, a: F.mul(t["a"], t["b"]), "div": lambda t, a: F.div(t["a"], t["b"]),
    "maximum": lambda t, a: F.maximum(t["a"], t["b"]),
    "minimum": lambda t, a: F.minimum(t["a"], t["b"]),
    "scalar_add": _scalar(F.add), "scalar_sub": _scalar(F.sub),
    "scalar_rsub": _scalar(F.sub, reverse=True), "scalar_mul": _scalar(F.mul),
    "scalar_div": _scalar(F.div), "scalar_rdiv": _scalar(F.div, reverse=True),
    "eq": lambda t, a: F.eq(t["a"], t["b"]), "lt": lambda t, a: F.lt(t["a"], t["b"]),
    "logical_and": lambda t, a: F.logical_and(t["a"], t["b"]),
    "where": lambda t, a: F.where(t["cond"], t["x"], t["y"]),
    "masked_fill": lambda t, a: F.masked_fill(t["in"], t["mask"], a["value"]),
    "softmax": lambda t, a: F.softmax(t["in"], int(a.get("axis", -1))),
    "log_softmax": lambda t, a: F.log_softmax(t["in"], int(a.get("axis", -1))),
    "bias_add": lambda t, a: F.bias_add(t["a"], t["b"], int(a.get("axis", -1))),
    "matmul": lambda t, a: F.matmul(t["a"], t["b"], transpose_a=a["transpose_a"],
                                    transpose_b=a["transpose_b"]),
    "reduce_sum": lambda t, a: F.sum(t["in"], _axes(a.get("axis")), bool(a.get("keepdims"))),
    "reduce_mean": lambda t, a: F.mean(t["in"], _axes(a.get("axis")), bool(a.get("keepdims"))),
    "reduce_max": lambda t, a: F.amax(t["in"], _axes(a.get("axis")), bool(a.get("keepdims"))),
    "argmax": lambda t, a: F.argmax(t["in"], a.get("axis"), bool(a.get("keepdims"))),
    "transpose": lambda t, a: F.transpose(t["in"], a.get("perm")),
    "reshape": lambda t, a: F.reshape(t["in"], a["shape"]),
    "cast": lambda t, a: F.cast(t["in"], a["dtype"]),
    "broadcast_to": lambda t, a: F.broadcast_to(t["in"], a["shape"]),
}


def _draw_accepted(op: str, data: st.DataObject) -> tuple[dict, dict]:
    """A case whose inputs are not 0-d: a job's input is a tensor of rank >= 1 (scalars
    enter as attrs), so 0-d cases stay in the kernel oracle."""
    ins, attrs = ORACLES[op].draw(data)
    assume(all(np.ndim(v) for v in ins.values()))
    return ins, attrs


def _want(op: str, ins: dict, attrs: dict, dtype: str) -> dict:
    return ORACLES[op].ref(ins, attrs, {"out": dtype})


def _check(op: str, where: str, ins: dict, attrs: dict, got: np.ndarray) -> None:
    want = _want(op, ins, attrs, got.dtype.name)
    compare(op, where, {"out": got}, want, {"out": got.dtype.name}, ORACLES[op].rtol)


QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
         HealthCheck.function_scoped_fixture, HealthCheck.large_base_example]
SETTINGS = settings(max_examples=8, deadline=None, suppress_health_check=QUIET)


@pytest.fixture
def vm(cuda_device):
    """One eager environment per test (its examples share it), shut down after it."""
    from actorflow import eager

    eager.shutdown()
    yield
    problems = eager.shutdown()
    assert not problems, problems


@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("op", sorted(API))
@SETTINGS
@given(data=st.data())
def test_eager_ops_give_the_stable_reference(op, device, data, vm):
    ins, attrs = _draw_accepted(op, data)
    tensors = {k: af.tensor(v, device=device) for k, v in ins.items()}
    with np.errstate(all="ignore"):
        got = API[op](tensors, attrs).numpy()
    _check(op, f"eager {device}", ins, attrs, got)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("op", sorted(API))
@settings(max_examples=2, deadline=None, suppress_health_check=QUIET)
@given(data=st.data())
def test_ops_in_a_job_give_the_stable_reference(op, device, data, cuda_device):
    cases = [_draw_accepted(op, data) for _ in range(3)]
    place = af.placement(device, ranks=[0])
    with af.Job(f"oracle_{op}", register_num=1) as job:
        for c, (ins, attrs) in enumerate(cases):
            tensors = {k: af.input(f"c{c}_{k}", v.shape, v.dtype.name, placement=place)
                       for k, v in ins.items()}
            af.output(f"y{c}", API[op](tensors, attrs))
    plan = af.compile(job)
    feeds = {f"c{c}_{k}": v for c, (ins, _) in enumerate(cases) for k, v in ins.items()}
    with af.Session(plan, timeout=60) as s:
        outs = s.run(feeds)
    for c, (ins, attrs) in enumerate(cases):
        _check(op, f"a job on {device}", ins, attrs, np.asarray(outs[f"y{c}"]))
