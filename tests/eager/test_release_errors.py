"""Blobs go back when their last tensor dies (the VM's own counters say so), Python
returns before kernels finish, and a kernel error surfaces at the next wait naming the op
and this file's line, after which the VM keeps working."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import actorflow as af
from actorflow.errors import EagerKernelError
from actorflow.frontend.dispatch import op_expr

SLEEP = op_expr("sleep", ("in",))
MIB = 1 << 20


def test_release_returns_blobs_and_bytes_after_del():
    c0 = af.counters()
    x = af.zeros(256, 1024)  # 1 MiB
    y = x + 1
    af.sync()
    c1 = af.counters()
    assert c1["live_blobs"] - c0["live_blobs"] == 2
    assert c1["live_bytes"] - c0["live_bytes"] == 2 * MIB
    del x  # y still lives; x's blob goes back
    af.sync()
    c2 = af.counters()
    assert (c2["live_blobs"] - c0["live_blobs"], c2["live_bytes"] - c0["live_bytes"]) == (1, MIB)
    assert y.numpy()[0, 0] == 1.0
    del y
    af.sync()
    c3 = af.counters()
    assert (c3["live_blobs"], c3["live_bytes"]) == (c0["live_blobs"], c0["live_bytes"])
    assert c3["freed_bytes"] - c0["freed_bytes"] == 2 * MIB


def test_a_loop_of_temporaries_does_not_accumulate():
    c0 = af.counters()
    z = af.ones(1000)
    for _ in range(300):
        z = z * 1.0 + 0.0
    af.sync()
    c1 = af.counters()
    assert c1["live_blobs"] - c0["live_blobs"] == 1
    assert c1["live_bytes"] - c0["live_bytes"] == 4000
    assert c1["instructions_done"] == c1["instructions_issued"]


def test_release_waits_for_a_pending_reader():
    x = af.tensor(np.arange(4.0))
    y = SLEEP({"in": x}, {"ms": 200.0})  # reads x for 200 ms
    del x  # the release must not run before the slow read
    np.testing.assert_array_equal(y.numpy(), np.arange(4.0))


def test_python_returns_before_the_kernel_finishes():
    x = af.tensor([1.0, 2.0])
    y = SLEEP({"in": x}, {"ms": 500.0})
    c = af.counters()
    assert c["instructions_done"] < c["instructions_issued"]  # still sleeping
    np.testing.assert_array_equal(y.numpy(), [1.0, 2.0])  # .numpy() waits
    c = af.counters()
    assert c["instructions_done"] == c["instructions_issued"]


def test_kernel_error_surfaces_at_the_next_wait_and_the_vm_recovers():
    x = af.tensor([1, 2, 3])
    line = sys._getframe().f_lineno + 1
    y = x ** -1  # integers to a negative power: numpy's kernel raises
    z = y + 1
    with pytest.raises(EagerKernelError) as e:
        af.sync()
    msg = str(e.value)
    assert f"eager op 'scalar_pow' issued at {__file__}:{line}" in msg
    assert "Integers to negative integer powers are not allowed" in msg
    assert e.value.op_name == "scalar_pow" and e.value.where == f"{__file__}:{line}"
    # the VM keeps working, and the error was reported once
    np.testing.assert_array_equal((x * 2).numpy(), [2, 4, 6])
    af.sync()
    # tensors computed from the failed op have no value, and say why
    with pytest.raises(EagerKernelError, match=r"this tensor has no value: eager op "
                                               r"'scalar_pow'"):
        z.numpy()
    with pytest.raises(EagerKernelError, match="no value"):
        print(y)


def test_kernel_error_surfaces_at_numpy_of_another_tensor():
    a = af.tensor([1.0])
    bad = op_expr("fail", ("in",))({"in": a}, {"message": "boom in the kernel"})
    ok = a + 1
    with pytest.raises(EagerKernelError, match=r"eager op 'fail'.*boom in the kernel"):
        ok.numpy()
    np.testing.assert_array_equal(ok.numpy(), [2.0])  # reported once; ok's value is fine
    del bad


def test_wait_timeout_names_what_it_waited_for():
    y = SLEEP({"in": af.tensor([1.0])}, {"ms": 400.0})
    with pytest.raises(af.errors.WaitTimeout, match=r"waited 0.05s for the value of a tensor "
                                                   r"\(1,\) float32.*'sleep'"):
        y.numpy(timeout=0.05)
    assert y.numpy().tolist() == [1.0]
