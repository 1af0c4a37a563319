"""Device memory shared between processes on the emulated device, over shared memory.

CUDA lets a process export a device allocation as a 64-byte IPC handle that another
process of the machine opens to map the same memory.  The emulated device's memory is
host memory, so its shareable allocation is a /dev/shm segment and its handle is the
segment's name (padded to 64 bytes like CUDA's).  The owner unlinks the segment when it
closes; processes that opened it keep their mapping until they close it.
"""

from __future__ import annotations

import mmap
import os
from typing import Any

import numpy as np

from actorflow.errors import DeviceError

SHM_DIR = "/dev/shm"
HANDLE_BYTES = 64


class SharedAllocation:
    def __init__(self, name: str, mm: mmap.mmap, index: int) -> None:
        self.name = name
        self.mm = mm
        self.index = index


def _map(path: str, flags: int, size: int) -> mmap.mmap:
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as e:
        raise DeviceError(f"emulated device: cannot open shared device memory {path}: "
                          f"{e.strerror or e}") from e
    try:
        if flags & os.O_CREAT:
            os.ftruncate(fd, size)
        return mmap.mmap(fd, size)
    finally:
        os.close(fd)


def ipc_alloc(nbytes: int, index: int, name: str) -> tuple[SharedAllocation, bytes]:
    handle = name.encode()
    if len(handle) > HANDLE_BYTES:
        raise DeviceError(f"emulated device: shared allocation name {name!r} is longer than "
                          f"a {HANDLE_BYTES}-byte handle")
    mm = _map(os.path.join(SHM_DIR, name), os.O_RDWR | os.O_CREAT | os.O_EXCL,
              max(nbytes, 1))
    return SharedAllocation(name, mm, index), handle.ljust(HANDLE_BYTES, b"\0")


def ipc_open(handle: bytes, nbytes: int, index: int) -> SharedAllocation:
    name = bytes(handle).rstrip(b"\0").decode()
    mm = _map(os.path.join(SHM_DIR, name), os.O_RDWR, max(nbytes, 1))
    return SharedAllocation(name, mm, index)


def ipc_view(mem: SharedAllocation, offset: int, shape: tuple[int, ...], dtype: str,
             index: int) -> Any:
    from actorflow.streams.emulated.array import ndarray

    count = int(np.prod(shape, dtype=np.int64))
    a = np.frombuffer(mem.mm, dtype=dtype, count=count, offset=offset).reshape(shape)
    return ndarray._of(a, index)


def ipc_close(mem: SharedAllocation, owner: bool) -> None:
    if owner:
        try:
            os.unlink(os.path.join(SHM_DIR, mem.name))
        except FileNotFoundError:
            pass
    # the map itself closes when the last view of it is collected
