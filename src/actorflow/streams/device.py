"""Which array module a ``cuda:i`` memory case runs on: CuPy, or the emulated device.

``ACTORFLOW_DEVICE`` picks the backend for every ``cuda`` placement of a run: ``cuda``
(default: CuPy on real GPUs) or ``emulated`` (numpy under CuPy's rules, for CI).  A backend
gives the array module (``xp``), device count, streams, pinned host memory and device
memory that other processes of the machine can map.  Both are registered in
``DEVICE_BACKENDS``.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from typing import Any, Protocol

import numpy as np

from actorflow.errors import DeviceError
from actorflow.registry import Registry

DEVICE_ENV = "ACTORFLOW_DEVICE"


class DeviceBackend(Protocol):
    name: str
    xp: Any

    def device_count(self) -> int: ...

    def new_stream(self, index: int) -> Any: ...

    def close_stream(self, stream: Any) -> None: ...

    def zeros(self, shape: tuple[int, ...], dtype: str, index: int) -> Any: ...

    def pin(self, host: np.ndarray) -> None: ...

    def unpin(self, host: np.ndarray) -> None: ...

    def ipc_alloc(self, nbytes: int, index: int, name: str) -> tuple[Any, bytes]:
        """Device memory other processes of this machine can open, and its handle
        (``name``: a unique name for backends that need one)."""

    def ipc_open(self, handle: bytes, nbytes: int, index: int) -> Any: ...

    def ipc_view(self, mem: Any, offset: int, shape: tuple[int, ...], dtype: str,
                 index: int) -> Any: ...

    def ipc_close(self, mem: Any, owner: bool) -> None: ...


def _probe_cuda_major() -> int | None:
    """The CUDA major version the driver supports (``nvidia-smi``), None if unknown."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    marker = "CUDA Version:"
    if marker not in out:
        return None
    try:
        return int(out.split(marker, 1)[1].split()[0].split(".")[0])
    except (ValueError, IndexError):
        return None


def missing_cupy_hint() -> str:
    major = _probe_cuda_major()
    if major is not None and major >= 13:
        return f"the driver supports CUDA {major}: pip install 'actorflow[cuda13]'"
    if major is not None and major >= 12:
        return f"the driver supports CUDA {major}: pip install 'actorflow[cuda12]'"
    return ("pip install 'actorflow[cuda12]' (CUDA 12 drivers) or 'actorflow[cuda13]' "
            "(CUDA 13 drivers); nvidia-smi shows which")


def import_cupy() -> Any:
    try:
        import cupy
    except ImportError as e:
        raise DeviceError(
            "a 'cuda' placement (memory case cuda:i) needs CuPy, which is not installed: "
            f"{missing_cupy_hint()}; or run on the emulated device with "
            f"{DEVICE_ENV}=emulated") from e
    return cupy


class CupyBackend:
    """Real GPUs through CuPy."""

    name = "cuda"

    def __init__(self) -> None:
        self.xp = import_cupy()

    def device_count(self) -> int:
        try:
            return int(self.xp.cuda.runtime.getDeviceCount())
        except self.xp.cuda.runtime.CUDARuntimeError:
            return 0

    def new_stream(self, index: int) -> Any:
        with self.xp.cuda.Device(index):
            return self.xp.cuda.Stream(non_blocking=True)

    def close_stream(self, stream: Any) -> None:
        stream.synchronize()

    def zeros(self, shape: tuple[int, ...], dtype: str, index: int) -> Any:
        with self.xp.cuda.Device(index):
            return self.xp.zeros(shape, dtype)

    def pin(self, host: np.ndarray) -> None:
        if host.nbytes:
            self.xp.cuda.runtime.hostRegister(host.ctypes.data, host.nbytes, 0)

    def unpin(self, host: np.ndarray) -> None:
        if host.nbytes:
            self.xp.cuda.runtime.hostUnregister(host.ctypes.data)

    def ipc_alloc(self, nbytes: int, index: int, name: str) -> tuple[Any, bytes]:
        cuda = self.xp.cuda
        with cuda.Device(index):
            mem = cuda.Memory(max(nbytes, 1))  # its own cudaMalloc: the handle's base
            cuda.runtime.memset(mem.ptr, 0, max(nbytes, 1))
            return mem, bytes(cuda.runtime.ipcGetMemHandle(mem.ptr))

    def ipc_open(self, handle: bytes, nbytes: int, index: int) -> Any:
        cuda = self.xp.cuda
        with cuda.Device(index):
            ptr = cuda.runtime.ipcOpenMemHandle(handle)
            return cuda.UnownedMemory(ptr, max(nbytes, 1), None, index)

    def ipc_view(self, mem: Any, offset: int, shape: tuple[int, ...], dtype: str,
                 index: int) -> Any:
        cuda = self.xp.cuda
        return self.xp.ndarray(shape, dtype, cuda.MemoryPointer(mem, offset))

    def ipc_close(self, mem: Any, owner: bool) -> None:
        if not owner:
            self.xp.cuda.runtime.ipcCloseMemHandle(mem.ptr)


class EmulatedBackend:
    """The emulated device (``actorflow.streams.emulated``)."""

    name = "emulated"

    def __init__(self) -> None:
        from actorflow.streams import emulated

        self.xp = emulated

    def device_count(self) -> int:
        return int(self.xp.cuda.runtime.getDeviceCount())

    def new_stream(self, index: int) -> Any:
        with self.xp.cuda.Device(index):
            return self.xp.cuda.Stream(non_blocking=True)

    def close_stream(self, stream: Any) -> None:
        stream.synchronize()
        stream.close()

    def zeros(self, shape: tuple[int, ...], dtype: str, index: int) -> Any:
        with self.xp.cuda.Device(index):
            return self.xp.zeros(shape, dtype)

    def pin(self, host: np.ndarray) -> None:
        self.xp.cuda.runtime.hostRegister(host.ctypes.data, host.nbytes, 0)

    def unpin(self, host: np.ndarray) -> None:
        self.xp.cuda.runtime.hostUnregister(host.ctypes.data)

    def ipc_alloc(self, nbytes: int, index: int, name: str) -> tuple[Any, bytes]:
        """The emulated device's shareable memory is a shared-memory segment; its
        "IPC handle" is the segment's name."""
        return self.xp.cuda.ipc_alloc(nbytes, index, name)

    def ipc_open(self, handle: bytes, nbytes: int, index: int) -> Any:
        return self.xp.cuda.ipc_open(handle, nbytes, index)

    def ipc_view(self, mem: Any, offset: int, shape: tuple[int, ...], dtype: str,
                 index: int) -> Any:
        return self.xp.cuda.ipc_view(mem, offset, shape, dtype, index)

    def ipc_close(self, mem: Any, owner: bool) -> None:
        self.xp.cuda.ipc_close(mem, owner)


DEVICE_BACKENDS: Registry[type] = Registry("device backend")
DEVICE_BACKENDS.register("cuda", CupyBackend)
DEVICE_BACKENDS.register("emulated", EmulatedBackend)


def backend_name() -> str:
    return os.environ.get(DEVICE_ENV, "cuda") or "cuda"


@functools.cache
def _backend(name: str) -> DeviceBackend:
    try:
        cls = DEVICE_BACKENDS.get(name)
    except LookupError as e:
        raise DeviceError(f"{DEVICE_ENV}={name!r}: {e}") from e
    backend: DeviceBackend = cls()
    return backend


def device_backend() -> DeviceBackend:
    """The backend ``ACTORFLOW_DEVICE`` selects (CuPy unless it says ``emulated``)."""
    return _backend(backend_name())


LOCAL_RANK_ENV = "LOCAL_RANK"
DPM_ENV = "ACTORFLOW_DEVICES_PER_MACHINE"


def physical_index(index: int) -> int:
    """The device a machine's ``cuda:index`` runs on.  One process per machine: the index
    itself.  Several processes per host (SPMD ranks, one worker per GPU under Slurm):
    ``LOCAL_RANK`` picks this process's devices, ``LOCAL_RANK * devices_per_machine +
    index`` (``ACTORFLOW_DEVICES_PER_MACHINE``, set by flowlaunch, default 1)."""
    local = os.environ.get(LOCAL_RANK_ENV)
    if not local:
        return index
    try:
        return int(local) * int(os.environ.get(DPM_ENV, "1") or 1) + index
    except ValueError as e:
        raise DeviceError(f"{LOCAL_RANK_ENV}={local!r} / {DPM_ENV}="
                          f"{os.environ.get(DPM_ENV)!r}: expected integers") from e


class DeviceHandle:
    """One device of this machine on the selected backend."""

    def __init__(self, backend: DeviceBackend, index: int) -> None:
        self.backend = backend
        self.xp = backend.xp
        self.index = index

    def new_stream(self) -> Any:
        return self.backend.new_stream(self.index)

    def close_stream(self, stream: Any) -> None:
        self.backend.close_stream(stream)

    def zeros(self, shape: tuple[int, ...], dtype: str) -> Any:
        return self.backend.zeros(shape, dtype, self.index)

    def pin(self, host: np.ndarray) -> None:
        self.backend.pin(host)

    def unpin(self, host: np.ndarray) -> None:
        self.backend.unpin(host)



def check_device(index: int, where: str = "") -> DeviceHandle:
    """Device ``cuda:index`` of this machine, after checking that it exists."""
    backend = device_backend()
    n = backend.device_count()
    phys = physical_index(index)
    if not 0 <= phys < n:
        via = "" if phys == index else f" (device {phys} with {LOCAL_RANK_ENV}=" \
            f"{os.environ.get(LOCAL_RANK_ENV)})"
        raise DeviceError(
            f"{where or 'this run'} needs device cuda:{index}{via}, but this machine has {n} "
            f"{backend.name} device{'s' if n != 1 else ''}; compile with fewer devices per "
            "machine (--devices-per-machine) or place ops on fewer ranks")
    return DeviceHandle(backend, phys)
