"""CUDA stream on CuPy: kernels launch asynchronously; an act is done when its event is.

Imported only when a plan has a ``cuda:i`` memory case, so CuPy is never required.  The
unit polls ``completed()`` and sends an act's READY/ACK only after its event completed —
the same deferred path the CPU stream takes.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from actorflow.errors import ActorflowError
from actorflow.streams.stream import Stream, register_stream


def import_cupy() -> Any:
    try:
        import cupy
    except ImportError as e:
        raise ActorflowError(
            "a regst with mem_case 'cuda:i' needs CuPy; install it with "
            "pip install 'actorflow[cuda]'") from e
    return cupy


class CudaStream(Stream):
    device = "cuda"

    def __init__(self, device_index: int = 0) -> None:
        cp = import_cupy()
        self.xp = cp
        self.device_index = device_index
        with cp.cuda.Device(device_index):
            self._stream = cp.cuda.Stream(non_blocking=True)
        self._pending: deque[tuple[Any, Any, Any]] = deque()

    def launch(self, host: Any, act: Any) -> None:
        cp = self.xp
        with cp.cuda.Device(self.device_index), self._stream:
            host.run(act)
            event = cp.cuda.Event(disable_timing=True)
            event.record(self._stream)
        self._pending.append((event, host, act))

    def completed(self) -> list[Any]:
        done = []
        while self._pending and self._pending[0][0].done:  # in launch order
            _, host, act = self._pending.popleft()
            done.append((host, act))
        return done

    def has_pending(self) -> bool:
        return bool(self._pending)


def allocate_device(shape: tuple[int, ...], dtype: str, device_index: int) -> Any:
    cp = import_cupy()
    with cp.cuda.Device(device_index):
        return cp.zeros(shape, dtype)


register_stream("cuda", CudaStream)
