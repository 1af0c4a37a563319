"""Regst memory: ``register_num`` preallocated slots of named arrays per regst desc.

Allocation goes through an allocator so process units can place regsts in shared memory
while threads use plain numpy arrays; kernels only ever see arrays.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from actorflow.plan.model import RegstDesc
from actorflow.transport.shm import ShmAttach

Slots = list[dict[str, Any]]


class Allocator(Protocol):
    def allocate(self, desc: RegstDesc) -> Slots: ...

    def close(self) -> None: ...


class HostAllocator:
    """Plain numpy arrays in this process."""

    def allocate(self, desc: RegstDesc) -> Slots:
        if desc.mem_case.startswith("cuda"):
            from actorflow.streams.cuda import allocate_device

            idx = int(desc.mem_case.partition(":")[2] or 0)
            return [{name: allocate_device(b.shape, b.dtype, idx) for name, b in
                     desc.blobs.items()} for _ in range(desc.register_num)]
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
