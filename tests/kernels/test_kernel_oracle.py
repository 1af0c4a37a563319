"""Every op's kernel against a numerically stable numpy reference, at the edges: values up to
the dtype's limits, NaN, +-inf, -0.0 and subnormals where numpy defines the result
(+-1e3 for softmax, log_softmax and exp), empty and 0-d shapes, every attribute (axes
negative and positive, keepdims, transposes, bias axes), every dtype the op takes.  Each
drawn case runs on the CPU (numpy) and on the CUDA device the ``cuda_device`` fixture
gives (the emulated one here), inside a stream, and both must match the reference
(``oracle_base.compare``).  The records are in ``oracle_math.py`` and ``oracle_nn.py``;
``test_oracle_modes.py`` runs the ops through eager tensors and jobs.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actorflow.kernels import KernelContext, get_op, op_types
from actorflow.plan.model import BlobDesc
from tests.kernels.oracle_base import compare
from tests.kernels.oracle_math import ORACLES as MATH
from tests.kernels.oracle_nn import ORACLES as NN

ORACLES = {**MATH, **NN}

# Ops without an oracle here, and why (each is checked where it says).
EXEMPT = {
    "arange": "no inputs: its values are its attrs (tests/kernels/test_ops.py)",
    "constant": "no inputs: its values are its attrs (tests/kernels/test_ops.py)",
    "const_array": "no inputs: its values are its attrs (tests/gpu/test_kernels_on_device.py)",
    "random_normal": "random: exactly numpy's generator, on every device "
                     "(tests/gpu/test_kernels_on_device.py)",
    "variable": "state across pieces (tests/test_checkpoint.py, tests/kernels/test_ops.py)",
    "variable_part": "state across pieces (tests/plan/test_compile.py)",
    "variable_load": "checkpoint IO (tests/test_checkpoint.py)",
    "variable_save": "checkpoint IO (tests/test_checkpoint.py)",
    "assign": "state across pieces (tests/plan/test_multi_job.py)",
    "box_slice": "a region copy the compiler emits (tests/plan/test_compile_oracle.py)",
    "microbatch_slice": "rows by piece id in a repeat/acc pair (tests/autograd)",
    "microbatch_place": "rows by piece id in a repeat/acc pair (tests/autograd)",
    "learning_rate": "a schedule of a step counter (tests/optim)",
    "sleep": "a test op: passes its input through after a nap",
    "busy": "a test op: burns CPU, passes its input through",
    "fail": "a test op: raises on a chosen piece",
    "stamp": "a test op: writes the piece id",
}


def test_every_op_has_an_oracle_or_a_reason():
    ops = {t for t in op_types() if not t.startswith("test_")}  # not tests' own ops
    missing = sorted(ops - set(ORACLES) - set(EXEMPT))
    assert not missing, (f"ops with no oracle record (add one to tests/kernels/oracle_math.py "
                         f"or oracle_nn.py, or say in EXEMPT why not): {missing}")
    assert not set(ORACLES) & set(EXEMPT)
    assert not (set(ORACLES) | set(EXEMPT)) - ops, "records of ops that do not exist"


def _infer(op_type: str, ins: dict, attrs: dict) -> dict:
    descs = {k: BlobDesc(v.shape, v.dtype.name) for k, v in ins.items()}
    return get_op(op_type).infer_checked(op_type, descs, attrs)


def run_cpu(op_type: str, ins: dict, attrs: dict, inferred: dict) -> dict:
    outs = {k: np.full(d.shape, 123, d.dtype) for k, d in inferred.items()}
    ids = {k: id(v) for k, v in outs.items()}
    get_op(op_type).kernel(KernelContext(np, 0, 0, op_type), ins, outs, attrs)
    assert {k: id(v) for k, v in outs.items()} == ids, f"{op_type} replaced an output"
    return outs


def run_device(xp, op_type: str, ins: dict, attrs: dict, inferred: dict) -> dict:
    """The kernel on device 0 inside a stream (the way a unit launches it), then copied
    back after the stream's event."""
    with xp.cuda.Device(0):
        stream = xp.cuda.Stream(non_blocking=True)
        try:
            dev = {k: xp.asarray(v) for k, v in ins.items()}
            outs = {k: xp.full(d.shape, 123, d.dtype) for k, d in inferred.items()}
            with stream:
                get_op(op_type).kernel(KernelContext(xp, 0, 0, op_type), dev, outs, attrs)
                done = stream.record()
            done.synchronize()
            return {k: xp.asnumpy(v) for k, v in outs.items()}
        finally:
            if hasattr(stream, "close"):
                stream.close()  # the emulated stream's thread (CuPy's needs no closing)


@pytest.fixture(scope="module")
def xp_dev():
    """The device's array module for this module's tests (ACTORFLOW_DEVICE is set and
    restored per test by cuda_device; the module is fixed once per backend)."""
    from actorflow.streams.device import DEVICE_BACKENDS
    from tests.device import DEVICE

    return DEVICE_BACKENDS.get(DEVICE)().xp


EXAMPLES = int(os.environ.get("ACTORFLOW_ORACLE_EXAMPLES", "25"))  # more for a deep search


@pytest.mark.parametrize("op_type", sorted(ORACLES))
@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                 HealthCheck.data_too_large])
@given(data=st.data())
def test_kernel_matches_its_stable_reference_on_cpu_and_device(op_type, data, xp_dev,
                                                              cuda_device):
    oracle = ORACLES[op_type]
    ins, attrs = oracle.draw(data)
    inferred = _infer(op_type, ins, attrs)
    dtypes = {k: d.dtype for k, d in inferred.items()}
    want = oracle.ref(ins, attrs, dtypes)
    with np.errstate(all="ignore"):  # overflow to inf, NaN in, 0/0: defined results
        got = run_cpu(op_type, ins, attrs, inferred)
    scale = oracle.scale(ins, attrs) if oracle.scale is not None else None
    compare(op_type, "cpu", got, want, dtypes, oracle.rtol, scale)
    compare(op_type, "device", run_device(xp_dev, op_type, ins, attrs, inferred), want,
            dtypes, oracle.rtol, scale)
