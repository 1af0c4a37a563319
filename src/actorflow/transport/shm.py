"""Shared-memory slots for process units: one segment per regst desc, ``slots`` slots.

The node creates every segment of its machine once (``ShmArena``) before any unit process
starts; units attach by name (``ShmAttach``; ``actors/memory.py`` wraps it as an allocator
for ``MachineRuntime``) and never unlink.  A segment is described by plain values (desc id,
slot count, ``{blob name: (shape, dtype)}``): transport knows no plan.  Only slot numbers
travel between processes.  Names are
``actorflow<run_id>_m<machine>_d<desc>``, so the launcher (after a killed worker) and each
host's reaper find and unlink them by prefix (``launcher/leftovers.py``).

POSIX shared memory on Linux is a file in /dev/shm; we open it there directly instead of
``multiprocessing.shared_memory`` because Python 3.11's resource tracker would unlink
segments when an attaching unit exits.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from actorflow.errors import TransportError

# blob name -> (shape, dtype str): what one slot holds
Blobs = Mapping[str, tuple[Sequence[int], str]]

SHM_DIR = "/dev/shm"
PREFIX = "actorflow"
_ALIGN = 64


def run_prefix(run_id: str) -> str:
    return f"{PREFIX}{run_id}_"


def segment_name(run_id: str, machine_id: int, desc_id: int) -> str:
    return f"{run_prefix(run_id)}m{machine_id}_d{desc_id}"


def _layout(blobs: Blobs) -> tuple[list[tuple[str, int, tuple, str]], int]:
    """Blob offsets inside one slot (64-byte aligned) and the slot size."""
    off, out = 0, []
    for name, (shape, dtype) in blobs.items():
        out.append((name, off, tuple(shape), dtype))
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        off += -(-nbytes // _ALIGN) * _ALIGN
    return out, max(off, _ALIGN)


def _views(mm: mmap.mmap, slots_n: int, blobs: Blobs) -> list[dict[str, np.ndarray]]:
    layout, slot_bytes = _layout(blobs)
    slots = []
    for s in range(slots_n):
        base = s * slot_bytes
        slots.append({
            name: np.frombuffer(mm, dtype=dtype, count=int(np.prod(shape, dtype=np.int64)),
                                offset=base + off).reshape(shape)
            for name, off, shape, dtype in layout})
    return slots


def _open(name: str, create: bool, size: int = 0) -> mmap.mmap:
    path = os.path.join(SHM_DIR, name)
    flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0)
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as e:
        what = "create" if create else "attach to"
        raise TransportError(f"cannot {what} shared-memory segment {path}: "
                             f"{e.strerror or e}") from e
    try:
        if create:
            os.ftruncate(fd, size)
        else:
            size = os.fstat(fd).st_size
        # MAP_POPULATE: fault every page in now, not during the first acts of the run
        flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
        return mmap.mmap(fd, size, flags=flags)
    except OSError as e:
        if create:
            os.unlink(path)
        raise TransportError(f"cannot map shared-memory segment {path} ({size} bytes): "
                             f"{e.strerror or e}") from e
    finally:
        os.close(fd)


def segment_bytes(slots: int, blobs: Blobs) -> int:
    return _layout(blobs)[1] * slots


class ShmArena:
    """Creates (and later unlinks) the segments of one machine's regst descs."""

    def __init__(self, run_id: str, machine_id: int) -> None:
        self.run_id = run_id
        self.machine_id = machine_id
        self.names: list[str] = []
        self.maps: dict[int, mmap.mmap] = {}
        self.memory: dict[int, list[dict[str, np.ndarray]]] = {}

    def create(self, desc_id: int, slots: int, blobs: Blobs) -> list[dict[str, np.ndarray]]:
        """The segment of regst desc ``desc_id``: ``slots`` slots of ``blobs``."""
        if not blobs:
            self.memory[desc_id] = [{} for _ in range(slots)]
            return self.memory[desc_id]
        name = segment_name(self.run_id, self.machine_id, desc_id)
        mm = _open(name, True, segment_bytes(slots, blobs))
        self.names.append(name)
        self.maps[desc_id] = mm
        self.memory[desc_id] = _views(mm, slots, blobs)
        return self.memory[desc_id]

    def unlink(self) -> None:
        """Unlink every segment (units that still map them keep their pages until exit),
        and whatever else of this run and machine a unit process left (device memory
        handles of a unit that died before closing)."""
        mine = f"{run_prefix(self.run_id)}m{self.machine_id}_"
        for name in list_run_segments(self.run_id):
            if name.startswith(mine) and name not in self.names:
                self.names.append(name)
        for name in self.names:
            try:
                os.unlink(os.path.join(SHM_DIR, name))
            except FileNotFoundError:
                pass
        self.names = []
        self.memory.clear()
        maps, self.maps = self.maps, {}
        for mm in maps.values():
            try:
                mm.close()
            except BufferError:
                pass  # a view is still referenced; the map closes when it is collected


class ShmAttach:
    """A unit process's side: attach to the node's segment of each regst desc."""

    def __init__(self, run_id: str, machine_id: int) -> None:
        self.run_id = run_id
        self.machine_id = machine_id
        self._maps: list[mmap.mmap] = []

    def attach(self, desc_id: int, slots: int, blobs: Blobs) -> list[dict[str, Any]]:
        if not blobs:
            return [{} for _ in range(slots)]
        mm = _open(segment_name(self.run_id, self.machine_id, desc_id), False)
        need = segment_bytes(slots, blobs)
        if len(mm) < need:
            raise TransportError(f"shared-memory segment of regst desc {desc_id} has "
                                 f"{len(mm)} bytes, expected {need}")
        self._maps.append(mm)
        return _views(mm, slots, blobs)

    def close(self) -> None:
        self._maps = []  # views may still be referenced; maps close when collected


def list_run_segments(run_id: str | None = None) -> list[str]:
    """Segments in /dev/shm of ``run_id`` (or of any actorflow run)."""
    prefix = run_prefix(run_id) if run_id else PREFIX
    try:
        return sorted(n for n in os.listdir(SHM_DIR) if n.startswith(prefix))
    except OSError:
        return []
