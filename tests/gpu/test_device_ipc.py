"""Device regsts shared between the processes of one machine through IPC handles.

The producer's process allocates a ``cuda:i`` regst desc once and publishes its handle;
another process opens the handle and maps the *same* device memory: what one writes on
the device, the other reads, with no host copy in between.  (CUDA IPC on a GPU; shared
memory under the same API on the emulated device.)
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from actorflow.actors.memory import SharedDeviceAllocator
from actorflow.errors import WaitTimeout
from actorflow.plan.model import BlobDesc, RegstDesc
from actorflow.transport.shm import ShmAttach, list_run_segments

DESC = RegstDesc(7, 3, [4], 2, {"out": BlobDesc((4, 5), "float32"),
                                "idx": BlobDesc((3,), "int64")}, mem_case="cuda:0")

CONSUMER = textwrap.dedent("""
    import sys
    from actorflow.actors.memory import SharedDeviceAllocator
    from actorflow.plan.model import BlobDesc, RegstDesc
    from actorflow.streams.device import device_backend
    from actorflow.transport.shm import ShmAttach
    desc = RegstDesc(7, 3, [4], 2, {"out": BlobDesc((4, 5), "float32"),
                                    "idx": BlobDesc((3,), "int64")}, mem_case="cuda:0")
    alloc = SharedDeviceAllocator(ShmAttach(sys.argv[1], 0), sys.argv[1], 0, hosted=[4])
    slots = alloc.allocate(desc)
    xp = device_backend().xp
    seen = float(xp.sum(slots[1]["out"]).item())
    slots[1]["out"] += 1.0       # a kernel of the consumer's process, on the device
    slots[0]["idx"][...] = 42
    xp.cuda.Device(0).synchronize()
    print(seen)
    alloc.close()
""")


def test_a_second_process_maps_the_producers_device_memory(xp):
    run_id = f"ipc{os.getpid()}"
    alloc = SharedDeviceAllocator(ShmAttach(run_id, 0), run_id, 0, hosted=[3])
    try:
        slots = alloc.allocate(DESC)  # task 3 produces desc 7: allocated and published here
        assert isinstance(slots[1]["out"], xp.ndarray)
        slots[1]["out"][...] = xp.asarray(np.arange(20, dtype=np.float32).reshape(4, 5))
        xp.cuda.Device(0).synchronize()
        r = subprocess.run([sys.executable, "-c", CONSUMER, run_id], capture_output=True,
                           text=True, timeout=60, env=dict(os.environ))
        assert r.returncode == 0, r.stderr
        assert float(r.stdout.strip()) == float(np.arange(20).sum())  # it saw our bytes
        np.testing.assert_array_equal(xp.asnumpy(slots[1]["out"]),
                                      np.arange(20, dtype=np.float32).reshape(4, 5) + 1)
        np.testing.assert_array_equal(xp.asnumpy(slots[0]["idx"]), [42, 42, 42])
        np.testing.assert_array_equal(xp.asnumpy(slots[0]["out"]), 0)  # slots are apart
    finally:
        alloc.close()
    assert list_run_segments(run_id) == []  # the owner unlinked handle and memory


def test_a_missing_producer_is_a_timeout_naming_the_regst(monkeypatch):
    import actorflow.streams.ipc as ipc

    monkeypatch.setattr(ipc.wait_handle, "__defaults__", (0.2,))
    run_id = f"ipcmiss{os.getpid()}"
    alloc = SharedDeviceAllocator(ShmAttach(run_id, 0), run_id, 0, hosted=[])
    with pytest.raises(WaitTimeout, match=r"device memory handle of regst desc 7 \(task 3\)"):
        alloc.allocate(DESC)
