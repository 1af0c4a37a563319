"""Blob objects: the data of an eager tensor plus the VM's dependency bookkeeping.

A blob is written by one instruction (its producer) and read by any number; the
scheduler orders instructions by these reads and writes (read-after-write,
write-after-read, write-after-write).  The array is allocated by the instruction that
computes it, on that instruction's stream, and dropped by a release instruction.
"""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from actorflow.kernels.blob import BlobDesc

if TYPE_CHECKING:
    from actorflow.eager.device import Device
    from actorflow.eager.instruction import Instruction

_ids = itertools.count(1)


class Meta:
    """(shape, dtype, device) of a blob, interned: one object per combination, so caches
    keyed by metas hash and compare by identity (``meta_of``)."""

    __slots__ = ("device", "dtype", "nbytes", "shape")

    def __init__(self, shape: tuple[int, ...], dtype: str, device: Device) -> None:
        self.shape = shape
        self.dtype = dtype
        self.device = device
        self.nbytes = math.prod(shape) * np.dtype(dtype).itemsize

    def __repr__(self) -> str:
        return f"Meta({self.shape}, {self.dtype}, {self.device})"


_METAS: dict[tuple, Meta] = {}


def meta_of(shape: tuple[int, ...], dtype: str, device: Device) -> Meta:
    key = (shape, dtype, device)
    m = _METAS.get(key)
    if m is None:
        if len(_METAS) > 100_000:  # old metas stay valid; only the interning restarts
            _METAS.clear()
        m = _METAS[key] = Meta(shape, dtype, device)
    return m


class BlobObject:
    __slots__ = ("array", "dead", "device", "dtype", "error", "id", "last_writer", "meta",
                 "nbytes", "nreads", "producer", "prune_at", "readers", "shape")

    def __init__(self, shape: tuple[int, ...], dtype: str, device: Device,
                 array: Any = None, nbytes: int | None = None, meta: Meta | None = None) -> None:
        self.id = next(_ids)
        self.shape = shape
        self.dtype = dtype
        self.meta = meta or meta_of(shape, dtype, device)  # hashable key for caches
        self.device = device
        self.array = array
        self.nbytes = self.meta.nbytes if nbytes is None else nbytes
        self.producer: Instruction | None = None  # set at issue: what .numpy() waits for
        self.last_writer: Instruction | None = None  # scheduler bookkeeping
        self.readers: list[Instruction] = []
        self.prune_at = 16
        self.error: Exception | None = None  # set when the producer failed (poisoned)
        self.dead = False  # its tensor died: a fused chain may reuse its buffer
        self.nreads = 0  # reads ever issued (an instruction's, or a fused step's)

    def desc_view(self) -> BlobDesc:
        return BlobDesc(self.shape, self.dtype)

    def __repr__(self) -> str:
        return f"<blob {self.id} {self.shape} {self.dtype} on {self.device}>"
