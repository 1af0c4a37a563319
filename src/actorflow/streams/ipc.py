"""Device memory shared by the processes of one machine: allocate, publish a handle, open.

Process units of one machine share every regst.  A ``cuda:i`` regst lives in device
memory that its producer's process allocates once (all slots in one allocation) and
exports as an IPC handle; the consumer processes open the handle and see the same device
memory, so no byte goes through the host.  On CuPy the handle is CUDA's
(``cudaIpcGetMemHandle`` / ``cudaIpcOpenMemHandle``); on the emulated device it names a
shared-memory segment holding the "device" bytes.  Both go through the backend's
``ipc_alloc`` / ``ipc_open`` / ``ipc_view`` / ``ipc_close``.

The handle travels through a small file in /dev/shm (``<prefix>_ipc``) that the producer
writes under a temporary name and renames into place (atomic: a consumer that sees the
name sees the whole handle); consumers wait for it with a timeout that names the regst.
"""

from __future__ import annotations

import os
import time
from typing import Any

from actorflow.errors import WaitTimeout

SHM_DIR = "/dev/shm"
HANDOFF_TIMEOUT = 60.0


def publish(name: str, handle: bytes) -> str:
    """Write ``handle`` to /dev/shm/``name`` atomically; returns the path."""
    path = os.path.join(SHM_DIR, name)
    tmp = f"{path}.tmp{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, len(handle).to_bytes(4, "little") + handle)
    finally:
        os.close(fd)
    os.rename(tmp, path)
    return path


def wait_handle(name: str, what: str, timeout: float = HANDOFF_TIMEOUT) -> bytes:
    """The handle published under ``name``; ``what`` names the regst for the timeout."""
    path = os.path.join(SHM_DIR, name)
    deadline = time.monotonic() + timeout
    while True:
        try:
            with open(path, "rb") as f:
                data = f.read()
            n = int.from_bytes(data[:4], "little")
            return data[4:4 + n]
        except FileNotFoundError:
            if time.monotonic() > deadline:
                raise WaitTimeout(f"waited {timeout:.0f}s for the device memory handle of "
                                  f"{what} ({path}); its producer's unit process did not "
                                  "publish it") from None
            time.sleep(0.005)


def unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


class SharedDeviceMemory:
    """One regst desc's device memory in this process: owned (allocated here and
    published) or opened from the producer's handle."""

    def __init__(self, device: Any, mem: Any, owner: bool, handoff: str | None) -> None:
        self.device = device
        self.mem = mem
        self.owner = owner
        self.handoff = handoff

    def view(self, offset: int, shape: tuple[int, ...], dtype: str) -> Any:
        return self.device.backend.ipc_view(self.mem, offset, shape, dtype, self.device.index)

    def close(self) -> None:
        if self.handoff is not None:
            unlink(self.handoff)
        self.device.backend.ipc_close(self.mem, self.owner)
