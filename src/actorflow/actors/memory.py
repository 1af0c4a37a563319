"""Regst memory: ``register_num`` preallocated slots of named arrays per regst desc.

Allocation goes through an allocator so process units can place regsts in shared memory
while threads use plain numpy arrays; kernels only ever see arrays.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from actorflow.plan.model import RegstDesc

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
