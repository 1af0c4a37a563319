"""Output pieces in batches: one copy out of the regst, then frames that are never copied.

An output actor's act hands its regst (views, valid only during the call) to a
``Batcher``, which copies each blob into the next row of a per-output batch array (the one
copy on the way to the launcher: the regst is reused as soon as the act's ACK is out).  A
batch is emitted as ``emit(task, piece_ids, {blob: array of shape (n, *blob shape)})``
when it is full, when the unit is about to wait for messages (``flush``), and before the
unit reports DONE.  The emitted arrays are fresh and never written again, so they can go
out as zero-copy frames and be forwarded by reference (unit -> node -> launcher).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from actorflow.plan.model import Task

Emit = Callable[[Task, list[int], dict[str, np.ndarray]], None]
MAX_PIECES = 256  # pieces per batch; also bounds the batch's bytes with small blobs
MAX_BYTES = 8 << 20  # a batch of large pieces is emitted before it reaches this size


class _Batch:
    __slots__ = ("arrays", "capacity", "ids", "task")

    def __init__(self, task: Task, arrays: Mapping[str, Any]) -> None:
        self.task = task
        per_piece = sum(a.nbytes for a in arrays.values()) or 1
        self.capacity = max(1, min(MAX_PIECES, MAX_BYTES // per_piece))
        self.arrays = {k: np.empty((self.capacity, *np.shape(a)), dtype=a.dtype)
                       for k, a in arrays.items()}
        self.ids: list[int] = []


class Batcher:
    """Collects output pieces per output task; thread-safe (several units may deliver)."""

    def __init__(self, emit: Emit) -> None:
        self.emit = emit
        self._batches: dict[int, _Batch] = {}
        self._lock = threading.Lock()
        self.pending = False  # a piece waits in some batch
        self.pieces = 0  # pieces added so far

    def add(self, task: Task, piece_id: int, arrays: Mapping[str, Any]) -> None:
        with self._lock:  # emits under the lock too: batches of one output stay in order
            b = self._batches.get(task.task_id)
            if b is None:
                b = self._batches[task.task_id] = _Batch(task, arrays)
            row = len(b.ids)
            for k, dst in b.arrays.items():
                dst[row] = arrays[k]
            b.ids.append(piece_id)
            self.pieces += 1
            self.pending = True
            if len(b.ids) == b.capacity:
                self._batches[task.task_id] = _Batch(task, arrays)
                self.emit(b.task, b.ids, b.arrays)

    def flush(self) -> None:
        """Emit every partial batch (the unit is idle, or done)."""
        with self._lock:
            if not self.pending:
                return
            out = [b for b in self._batches.values() if b.ids]
            self._batches = {}
            self.pending = False
            for b in out:
                n = len(b.ids)
                self.emit(b.task, b.ids, {k: a[:n] for k, a in b.arrays.items()})
