"""Kernels at their edges (issue 20): every op against a numerically stable numpy reference.

Hypothesis draws each op's inputs, attrs and piece from the op table
(``tests/kernels/op_table.py``): extreme values (+-1e3 where softmax, exp and log_softmax
overflow without care, the largest finite values, subnormals, +-0.0, NaN and +-inf),
0-d and empty shapes, every attr (axes of reductions, softmax and bias_add, keepdim,
transposes, ...) and every dtype the op accepts.  Each example runs

* the kernel on the CPU and on the device (``ACTORFLOW_DEVICE``, the emulated one here),
* the public API eagerly on the CPU and on the device,

and a few examples of every op together run in one job (``af.Job`` + ``af.compile`` +
``af.Session``) on the CPU and on the device.  Results are compared with the reference
under a GPU's tolerances (``tests/kernels/compare.py``); result dtypes follow OneFlow's
promotion (``kernels/dtype.py``).
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from actorflow.errors import OpError
from actorflow.kernels import get_op, op_types
from actorflow.kernels.dtype import NAMES
from actorflow.plan.model import BlobDesc
from tests.kernels import runners
from tests.kernels.compare import TIERS, assert_matches
from tests.kernels.draws import Example
from tests.kernels.op_table import RAW, TABLE, OpCase
from tests.kernels.reference import REFS
from tests.kernels.regressions import REGRESSIONS

ORACLE = sorted(op for op, c in TABLE.items() if c.draw is not None)
# examples per op (each runs 4 ways) and per job; ACTORFLOW_ORACLE_EXAMPLES=500 searches deeper
EXAMPLES = int(os.environ.get("ACTORFLOW_ORACLE_EXAMPLES", 25))
JOB_EXAMPLES = max(EXAMPLES // 3, 5)
# extreme values overflow, divide by zero and make NaNs on purpose (numpy warns of each)
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
_SLOW_FIXTURE = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                 HealthCheck.data_too_large]


@pytest.fixture
def device_xp(cuda_device):
    from actorflow.streams.device import device_backend

    return device_backend().xp


def check(case: OpCase, ex: Example, got: np.ndarray, where: str) -> None:
    want = REFS[case.op](ex.ins, ex.attrs, ex.piece)
    mag = case.mag(ex, want) if case.mag is not None else None
    got = np.asarray(got)
    what = f"{case.op} {where} with attrs {ex.attrs}, piece {ex.piece}"
    if case.compare == "first":  # only element 0 is specified
        assert got.shape == want.shape and got.dtype == want.dtype, what
        got, want = got.reshape(-1)[:1], want.reshape(-1)[:1]
    assert_matches(got, want, what=what, ulps=TIERS[case.tier], mag=mag, inputs=ex.ins)


def test_every_registered_op_is_in_the_oracle():
    """A new op gets a strategy in the op table, or is named here with why not."""
    builtin = {t for t in op_types() if not t.startswith("test_")}
    stateful = {"variable_save", "variable_load"}  # files: tests/test_checkpoint.py
    assert sorted(builtin - set(ORACLE) - stateful) == []
    for op in ORACLE:
        c = TABLE[op]
        assert c.tier in TIERS, op
        assert c.api is not None or not (c.eager or c.job), f"{op}: how is it called?"


@pytest.mark.parametrize("op", ORACLE)
def test_op_at_its_edges(op, device_xp, cuda_device, fresh_vm):
    case = TABLE[op]

    def body(ex: Example) -> None:
        check(case, ex, runners.kernel(op, ex), "kernel on the CPU")
        check(case, ex, runners.kernel(op, ex, device_xp), f"kernel on {cuda_device}")
        if case.eager and case.api is not None:
            first = dataclasses.replace(ex, piece=0)  # eager ops run as piece 0
            check(case, first, runners.eager(case, first, "cpu"), "eager on the CPU")
            check(case, first, runners.eager(case, first, "cuda"), f"eager on {cuda_device}")

    run = given(case.draw)(body)
    for _why, ex in REGRESSIONS.get(op, []):  # the failing cases of fixed bugs come first
        run = example(ex)(run)
    settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=_SLOW_FIXTURE)(run)()


def test_every_regression_names_an_op_of_the_table():
    assert set(REGRESSIONS) <= set(ORACLE)
    for op, cases in REGRESSIONS.items():
        for why, ex in cases:
            assert why and set(ex.ins) == set(TABLE[op].ins), (op, why)


@pytest.mark.parametrize("op", ORACLE)
def test_every_dtype_inference_accepts_gives_the_reference(op):
    """Inference either refuses a dtype with an OpError naming the op, or the kernel gives
    the reference's values and dtype for it (the fixed example, cast): no dtype is accepted
    that the kernel cannot compute."""
    case = TABLE[op]
    for name in _dtyped_inputs(case):
        for dtype in NAMES:
            with np.errstate(all="ignore"):
                ins = {k: v.astype(dtype) if k == name else v for k, v in case.ins.items()}
            ex = Example(ins, case.attrs, case.piece)
            descs = {k: BlobDesc(v.shape, v.dtype.name) for k, v in ins.items()}
            try:
                get_op(op).infer_checked(op, descs, case.attrs)
            except OpError as e:
                assert f"({op})" in str(e), e
                continue
            check(case, ex, runners.kernel(op, ex), f"kernel on the CPU, '{name}' {dtype}")


def _dtyped_inputs(case: OpCase) -> list[str]:
    fixed = {"index", "target", "step", "cond", "mask", "ref"}  # ints/bools by meaning
    return [k for k in case.ins if k not in fixed]


JOB_OPS = [op for op in ORACLE if TABLE[op].job and TABLE[op].api is not None]
GROUPS = [JOB_OPS[i::8] for i in range(8)]  # ops traced together into one job


@pytest.mark.parametrize("group", range(len(GROUPS)))
@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_ops_in_a_job(device, group, cuda_device, fresh_vm):
    """The group's ops traced into one job (inputs fed each piece; two pieces, so the
    piece-seeded ops differ), compiled and run by a Session on the CPU or the device."""
    cases = [TABLE[op] for op in GROUPS[group]]

    # no shrinking: a job of many ops is slow to shrink; test_op_at_its_edges[op] shrinks
    # the same op's failure on its own
    @settings(max_examples=JOB_EXAMPLES, deadline=None, suppress_health_check=_SLOW_FIXTURE,
              phases=[Phase.explicit, Phase.reuse, Phase.generate])
    @given(st.tuples(*[c.job_draw or c.draw for c in cases]))
    def run(examples: tuple[Example, ...]) -> None:
        pairs = list(zip(cases, examples))
        for piece, outs in enumerate(runners.job(pairs, device, pieces=2)):
            for case, ex in pairs:
                check(case, dataclasses.replace(ex, piece=piece), outs[case.op],
                      f"in a job on {device}")

    run()


def test_raw_ops_have_no_functional_name():
    """RAW in the table is only for ops with no public name (else the API is tested)."""
    import actorflow.functional as F

    raw = [op for op, c in TABLE.items() if c.api == RAW]
    assert not [op for op in raw if hasattr(F, op) and op not in ("constant", "arange")], raw


@pytest.mark.parametrize("op", ["reduce_max", "reduce_min", "argmax", "argmin"])
@pytest.mark.parametrize("shape, axis", [((0,), None), ((3, 0), 1), ((0, 2), [0])])
def test_an_extreme_of_nothing_is_refused_naming_the_op(op, shape, axis):
    """max/min/argmax/argmin have no identity: an empty axis is refused at inference (as
    torch does), not left to numpy's ValueError inside the kernel."""
    if op.startswith("arg") and isinstance(axis, list):
        axis = axis[0]
    with pytest.raises(OpError, match=rf"op '{op}' \({op}\): .* of an empty (axis|tensor)"):
        runners.kernel(op, Example({"in": np.zeros(shape, np.float32)}, {"axis": axis}))


def test_eager_plans_are_per_device_and_per_number_type(fresh_vm):
    """Two eager bugs the oracle found: a generator issued on the CPU after the same call on
    the device came back on the device (its cached plan had no device), and ``0.0 ** x``
    after ``0 ** x`` kept the int plan's dtype (0 == 0.0 hash alike)."""
    import actorflow as af
    import actorflow.functional as F

    assert str(af.arange(3, device="cuda").device).startswith("cuda")
    assert str(af.arange(3).device) == "cpu"
    x = af.tensor(np.array([True, False]))
    assert F.pow(0, x).dtype == "int64"  # bool ** int: int64 (OneFlow's promotion)
    as_float = F.pow(0.0, x)
    assert as_float.dtype == "float32"
    np.testing.assert_array_equal(as_float.numpy(), [0.0, 1.0])
