"""Element-wise chains fuse into one instruction when nothing observes the intermediates,
and give the unfused results and counters; errors inside a chain name their own op."""

from __future__ import annotations

import sys
from contextlib import contextmanager

import numpy as np
import pytest

import actorflow as af
import actorflow.functional as F
from actorflow import eager
from actorflow.errors import EagerKernelError


@contextmanager
def held(vm):
    """Hold the CPU stream's worker: what is issued meanwhile stays queued (and fusable)."""
    s = vm.stream("cpu.compute", 0)
    s.run_lock.acquire()
    try:
        yield
    finally:
        s.run_lock.release()


def _program(x):
    y = (x * 2.0 + 1.0).exp()
    keep = F.relu(y - 3.0)  # an intermediate the caller keeps (read after the chain)
    z = F.tanh(keep * 0.5) / 2.0
    return keep, z


def test_a_chain_is_one_instruction_and_equals_the_unfused_run(vm):
    if not vm.fuse:
        pytest.skip("the thread scheduler does not fuse")
    a = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    results, counters = [], []
    for fuse in (True, False):
        eager.shutdown(scheduler=vm.scheduler.name, fuse=fuse, core=vm.core.NAME)
        v = eager.get_vm()
        x = af.tensor(a)
        af.sync()
        before = af.counters()
        with held(v):
            keep, z = _program(x)
            c = af.counters()
        counters.append({k: c[k] - before[k] for k in ("ops_issued", "instructions_issued")})
        results.append((keep.numpy().copy(), z.numpy().copy()))
        del keep, z
        af.sync()
        c = af.counters()
        counters[-1].update(live_blobs=c["live_blobs"], live_bytes=c["live_bytes"],
                            allocated=c["allocated_bytes"], freed=c["freed_bytes"])
    (k1, z1), (k0, z0) = results
    np.testing.assert_array_equal(k1, k0)
    np.testing.assert_array_equal(z1, z0)
    fused, unfused = counters
    # 8 ops, and the release of the 6 dead temporaries that af.counters() flushes
    assert fused["ops_issued"] == unfused["ops_issued"] == unfused["instructions_issued"] == 9
    assert fused["instructions_issued"] == 2  # x is ready: the whole chain is one record
    assert {k: v for k, v in fused.items() if "issued" not in k} == \
        {k: v for k, v in unfused.items() if "issued" not in k}


def test_a_dead_intermediate_lends_its_buffer_a_live_one_keeps_its_values(vm):
    x = af.tensor(np.full(1000, 2.0, np.float32))
    af.sync()
    with held(vm):
        kept = x + 1.0
        y = kept * 3.0
        for _ in range(10):
            y = y + 1.0  # the previous y dies at once: its buffer is reused in place
    np.testing.assert_array_equal(y.numpy(), np.full(1000, 19.0, np.float32))
    np.testing.assert_array_equal(kept.numpy(), np.full(1000, 3.0, np.float32))
    del y, kept
    af.sync()
    assert af.counters()["live_blobs"] == 1  # only x


def test_an_error_inside_a_chain_names_its_op_and_line(vm):
    x = af.tensor(np.ones(4, np.int64))
    af.sync()
    with held(vm):
        good = x + 1
        bad = good ** -1  # numpy: integers to negative integer powers are not allowed
        line = sys._getframe().f_lineno - 1
        after = bad * 2
    with pytest.raises(EagerKernelError) as e:
        after.numpy()
    assert "'scalar_pow'" in str(e.value) and f"test_fusion.py:{line}" in str(e.value)
    np.testing.assert_array_equal(good.numpy(), [2, 2, 2, 2])
    with pytest.raises(EagerKernelError, match="has no value"):
        after.numpy()


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32"])
def test_every_ufunc_form_equals_its_ops_kernel(dtype):
    """The VM calls an element-wise op's ``ufunc`` directly where ``_ufunc`` says numpy
    computes in the op's result dtype (else it runs the kernel); actors call its kernel."""
    from types import SimpleNamespace

    from actorflow.eager.chain import Step, run_steps
    from actorflow.eager.device import CPU
    from actorflow.eager.interpreter import _ufunc
    from actorflow.kernels.blob import BlobDesc
    from actorflow.kernels.registry import OPS, KernelContext

    rng = np.random.default_rng(0)
    a = (rng.standard_normal((3, 4)) * 3).astype(dtype)
    b = (rng.standard_normal((1, 4)) * 3 + 0.5).astype(dtype)
    checked = 0
    for name in OPS.names():
        op = OPS.get(name)
        if op.ufunc is None:
            continue
        ins = {"a": a, "b": b} if op.inputs == ("a", "b") else {"in": a}
        attrs = {"scalar": 1.5} if name.startswith("scalar_") else {}
        try:
            descs = op.infer_checked(name, {k: BlobDesc(v.shape, v.dtype.name)
                                            for k, v in ins.items()}, attrs)
            want = {k: np.empty(d.shape, d.dtype) for k, d in descs.items()}
            with np.errstate(all="ignore"):
                op.kernel(KernelContext(xp=np), ins, want, attrs)
        except Exception:
            continue  # (e.g. negative's loop for a dtype): the VM raises the same
        form = _ufunc(op.ufunc, [SimpleNamespace(dtype=ins[k].dtype) for k in op.inputs],
                      attrs, (("out", SimpleNamespace(dtype=want["out"].dtype)),), CPU)
        if form is None:
            continue  # numpy would compute in another type: the VM runs the kernel
        blobs = {k: eager.blob.BlobObject(v.shape, v.dtype.name, CPU, v) for k, v in ins.items()}
        out = eager.blob.BlobObject(want["out"].shape, want["out"].dtype.name, CPU)

        class Host:
            xp, ufuncs, allocated, allocs = np, {}, 0, 0
        step = Step(name, None, op.kernel, form, blobs, {"out": out}, attrs,
                    [blobs[k] for k in op.inputs], [out])

        class Instr:
            operand = [step]
        with np.errstate(all="ignore"):
            run_steps(Instr, Host)
        np.testing.assert_array_equal(out.array, want["out"], err_msg=name)
        checked += 1
    assert checked >= (15 if dtype.startswith("float") else 5)
