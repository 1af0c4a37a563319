"""Regst memory: ``register_num`` preallocated slots of named arrays per regst desc.

Allocation goes through an allocator so process units can place regsts in shared memory
while threads use plain numpy arrays; kernels only ever see arrays.  Regsts with memory
case ``cuda:i`` are device arrays of the device backend (CuPy or the emulated device);
host regsts on either side of a copy task are pinned so copies run asynchronously.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

import numpy as np

from actorflow.plan.model import RegstDesc, Task
from actorflow.streams.device import check_device
from actorflow.streams.ipc import SharedDeviceMemory, publish, wait_handle
from actorflow.transport.shm import ShmAttach

Slots = list[dict[str, Any]]


class Allocator(Protocol):
    def allocate(self, desc: RegstDesc) -> Slots: ...

    def close(self) -> None: ...


def device_index(mem_case: str) -> int | None:
    """``cuda:i`` -> i; host memory -> None."""
    kind, _, idx = mem_case.partition(":")
    return int(idx or 0) if kind == "cuda" else None


def _where(desc: RegstDesc) -> str:
    return f"regst desc {desc.regst_desc_id} (task {desc.producer_task_id})"


class HostAllocator:
    """Plain numpy arrays in this process; device arrays for ``cuda:i`` descs."""

    def allocate(self, desc: RegstDesc) -> Slots:
        idx = device_index(desc.mem_case)
        if idx is not None:
            dev = check_device(idx, _where(desc))
            return [{name: dev.zeros(b.shape, b.dtype) for name, b in desc.blobs.items()}
                    for _ in range(desc.register_num)]
        return [
            {name: np.zeros(b.shape, b.dtype) for name, b in desc.blobs.items()}
            for _ in range(desc.register_num)
        ]

    def close(self) -> None:
        pass


def shm_blobs(desc: RegstDesc) -> dict[str, tuple[tuple[int, ...], str]]:
    """A desc's blobs as the plain shapes/dtypes shared memory is laid out by."""
    return {name: (tuple(b.shape), str(b.dtype)) for name, b in desc.blobs.items()}


class ShmAllocator:
    """A unit process's regsts: the node's shared-memory segment of each desc, attached."""

    def __init__(self, run_id: str, machine_id: int) -> None:
        self._attach = ShmAttach(run_id, machine_id)

    def allocate(self, desc: RegstDesc) -> Slots:
        return self._attach.attach(desc.regst_desc_id, desc.register_num, shm_blobs(desc))

    def close(self) -> None:
        self._attach.close()


_DEVICE_ALIGN = 256  # CUDA allocations are 256-byte aligned; so is every blob here


def _device_layout(desc: RegstDesc) -> tuple[list[list[tuple[str, int]]], int]:
    """Byte offset of every blob of every slot in one allocation, and its size."""
    off, slots = 0, []
    for _ in range(desc.register_num):
        slot = []
        for name, b in desc.blobs.items():
            slot.append((name, off))
            off += -(-max(b.nbytes(), 1) // _DEVICE_ALIGN) * _DEVICE_ALIGN
        slots.append(slot)
    return slots, off


class SharedDeviceAllocator:
    """Process units: host regsts are the node's shared-memory segments (``inner``); a
    ``cuda:i`` regst is one device allocation that the producer's process makes and
    exports as an IPC handle, and the consumers' processes open (``streams/ipc.py``): the
    bytes stay on the device between the processes of a machine."""

    def __init__(self, inner: Allocator, run_id: str, machine_id: int,
                 hosted: Iterable[int]) -> None:
        self.inner = inner
        self.prefix = f"actorflow{run_id}_m{machine_id}_"
        self.hosted = set(hosted)  # task ids of this process: it allocates what they produce
        self._shared: list[SharedDeviceMemory] = []

    def allocate(self, desc: RegstDesc) -> Slots:
        idx = device_index(desc.mem_case)
        if idx is None:
            return self.inner.allocate(desc)
        dev = check_device(idx, _where(desc))
        layout, nbytes = _device_layout(desc)
        name = f"{self.prefix}d{desc.regst_desc_id}"
        if desc.producer_task_id in self.hosted:
            mem, handle = dev.backend.ipc_alloc(nbytes, dev.index, f"{name}_dev")
            shared = SharedDeviceMemory(dev, mem, True, publish(f"{name}_ipc", handle))
        else:
            handle = wait_handle(f"{name}_ipc", _where(desc))
            shared = SharedDeviceMemory(dev, dev.backend.ipc_open(handle, nbytes, dev.index),
                                        False, None)
        self._shared.append(shared)
        return [{blob: shared.view(off, desc.blobs[blob].shape, desc.blobs[blob].dtype)
                 for blob, off in slot} for slot in layout]

    def close(self) -> None:
        shared, self._shared = self._shared, []
        for s in shared:
            s.close()
        self.inner.close()


def unit_mem_case(tasks: Iterable[Task], mem_of: dict[int, str]) -> str:
    """The memory a unit's kernels work in: the first device memory any of its tasks
    produces or, for ``copy_d2h``, reads (a device -> host copy runs on the device)."""
    for t in tasks:
        cases = [d.mem_case for d in t.produced.values()]
        if t.task_type == "copy_d2h":
            cases += [mem_of.get(i, "host") for i in t.consumed_ids()]
        for c in cases:
            if device_index(c) is not None:
                return c
    return "host"


class PinnedBuffers:
    """Pins the host regsts copy tasks read or write (``copy_h2d`` input, ``copy_d2h``
    output) so device copies from/to them are asynchronous; unpins them on close."""

    def __init__(self) -> None:
        self._pinned: list[tuple[Any, np.ndarray]] = []
        self._seen: set[int] = set()  # addresses (a desc two copies read is pinned once)

    def pin(self, tasks: Iterable[Task], memory: dict[int, Slots], mem_of: dict[int, str]
            ) -> None:
        for t in tasks:
            if t.task_type == "copy_h2d":
                host_ids, dev_case = t.consumed_ids(), next(
                    (d.mem_case for d in t.produced.values()), "host")
            elif t.task_type == "copy_d2h":
                host_ids = [d.regst_desc_id for d in t.produced.values()]
                dev_case = next((mem_of.get(i, "host") for i in t.consumed_ids()), "host")
            else:
                continue
            idx = device_index(dev_case)
            if idx is None:
                continue
            dev = check_device(idx, f"task {t.task_id} ({t.task_type})")
            for i in host_ids:
                for slot in memory.get(i, []):
                    for arr in slot.values():
                        addr = arr.ctypes.data if isinstance(arr, np.ndarray) else 0
                        if arr.nbytes and addr and addr not in self._seen:
                            self._seen.add(addr)
                            dev.pin(arr)
                            self._pinned.append((dev, arr))

    def close(self) -> None:
        pinned, self._pinned = self._pinned, []
        self._seen.clear()
        for dev, arr in pinned:
            dev.unpin(arr)
