"""``xp.cuda`` of the emulated device: devices, streams with their own thread, events,
pinned host memory and the runtime calls actorflow uses — the names and meanings of CuPy's.

A ``Stream`` owns a device thread.  Copies between a device array and *pinned* host memory
issued on a stream (``dev.set(pinned, stream)``, ``dev.get(stream, out=pinned)``) are
queued there and happen later, as a DMA engine would do them; an ``Event`` recorded on a
stream becomes ``done`` only when the device thread reaches it.  Kernels run on the thread
that calls them, after waiting for the copies queued before them on the current stream
(stream order).  So a unit that sends READY before an act's event is done, or acks a pinned
buffer before the copy out of it ran, reads stale data here just as on a GPU.

The device count is ``ACTORFLOW_EMULATED_DEVICES`` (default 2).
``ACTORFLOW_EMULATED_LATENCY_US`` makes the device thread wait that long before each piece
of queued work (a slow copy engine): tests use it to show that nothing reads a regst
before its event is done.
"""

from __future__ import annotations

import itertools
import os
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from actorflow.errors import WaitTimeout

DEVICES_ENV = "ACTORFLOW_EMULATED_DEVICES"
LATENCY_ENV = "ACTORFLOW_EMULATED_LATENCY_US"
SYNC_TIMEOUT = 60.0
_local = threading.local()
_ids = itertools.count()


class CUDARuntimeError(RuntimeError):
    """The emulated counterpart of CuPy's runtime error (e.g. an invalid device ordinal)."""


def device_count() -> int:
    try:
        return max(0, int(os.environ.get(DEVICES_ENV, "2")))
    except ValueError:
        return 0


def current_device() -> int:
    return getattr(_local, "device", 0)


class Device:
    """``with Device(i):`` makes device ``i`` current on this thread."""

    def __init__(self, device: int | None = None) -> None:
        self.id = current_device() if device is None else int(device)
        if not 0 <= self.id < device_count():
            raise CUDARuntimeError(f"cudaErrorInvalidDevice: invalid device ordinal {self.id} "
                                   f"(the emulated machine has {device_count()} devices, "
                                   f"{DEVICES_ENV})")
        self._prev: list[int] = []

    def __enter__(self) -> Device:
        self._prev.append(current_device())
        _local.device = self.id
        return self

    def __exit__(self, *exc: Any) -> None:
        _local.device = self._prev.pop()

    def use(self) -> None:
        _local.device = self.id

    def synchronize(self) -> None:
        for s in list(_streams):
            if s.device_id == self.id:
                s.synchronize()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)


_streams: set[Stream] = set()
_STOP = object()


class Stream:
    """An ordered queue of device work with its own thread (started on first use)."""

    null = False

    def __init__(self, null: bool = False, non_blocking: bool = False, ptds: bool = False
                 ) -> None:
        self.device_id = current_device()
        self.null = null
        self._work: queue.SimpleQueue = queue.SimpleQueue()
        self._queued = 0
        self._finished = 0
        self._data_queued = 0  # copies among them (events do not touch data)
        self._data_finished = 0
        self._cv = threading.Condition()
        self._thread: threading.Thread | None = None
        self._prev: list[Stream | None] = []
        self._error: BaseException | None = None

    # -- the device thread -----------------------------------------------------------------
    def _run(self) -> None:
        try:
            latency = float(os.environ.get(LATENCY_ENV, "0") or 0) / 1e6
        except ValueError:
            latency = 0.0
        while True:
            item = self._work.get()
            if item is _STOP:
                return
            fn, data = item
            if latency:
                time.sleep(latency)
            try:
                fn()
            except BaseException as e:  # reported by the next synchronize
                self._error = e
            with self._cv:
                self._finished += 1
                self._data_finished += data
                self._cv.notify_all()

    def enqueue(self, fn: Callable[[], None], data: bool = True) -> None:
        """Queue ``fn`` to run on the device thread after the work queued before it
        (``data``: it writes memory, so later kernels on this stream wait for it)."""
        if self.null:
            self.synchronize()
            fn()
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, daemon=True,
                                            name=f"actorflow-emudev{self.device_id}-"
                                                 f"stream{next(_ids)}")
            self._thread.start()
            _streams.add(self)
        with self._cv:
            self._queued += 1
            self._data_queued += data
        self._work.put((fn, data))

    @property
    def done(self) -> bool:
        return self._finished >= self._queued

    def synchronize(self, timeout: float = SYNC_TIMEOUT, data_only: bool = False) -> None:
        def finished() -> bool:
            if data_only:
                return self._data_finished >= self._data_queued
            return self._finished >= self._queued

        with self._cv:
            if not self._cv.wait_for(finished, timeout):
                raise WaitTimeout(f"emulated device {self.device_id}: stream work did not "
                                  f"finish within {timeout:.0f}s")
        if self._error is not None:
            e, self._error = self._error, None
            raise e

    def launch_host_func(self, callback: Callable[[Any], None], arg: Any) -> None:
        """``callback(arg)`` on the device thread once the work queued before it is done."""
        self.enqueue(lambda: callback(arg), data=False)

    def record(self, event: Event | None = None) -> Event:
        event = event or Event()
        event.record(self)
        return event

    def close(self) -> None:
        """Finish queued work and stop the device thread (emulated only; CuPy has none)."""
        if self._thread is not None:
            self._work.put(_STOP)
            self._thread.join(SYNC_TIMEOUT)
            self._thread = None
            _streams.discard(self)

    def __enter__(self) -> Stream:
        self._prev.append(getattr(_local, "stream", None))
        _local.stream = self
        return self

    def __exit__(self, *exc: Any) -> None:
        _local.stream = self._prev.pop()

    def use(self) -> Stream:
        _local.stream = self
        return self


def get_current_stream() -> Stream:
    s = getattr(_local, "stream", None)
    return s if s is not None else Stream(null=True)


def wait_current_stream(stream: Stream | None = None) -> None:
    """Kernels keep stream order: wait for copies queued before them (not for events,
    which touch no data: a GPU launches past them too)."""
    s = stream if stream is not None else getattr(_local, "stream", None)
    if s is not None and s._data_finished < s._data_queued:
        s.synchronize(data_only=True)


class Event:
    def __init__(self, block: bool = False, disable_timing: bool = False,
                 interprocess: bool = False) -> None:
        self._done = threading.Event()
        self._done.set()  # an event never recorded counts as done (CUDA's rule)
        self.timing = not disable_timing
        self.time_ns = 0

    def record(self, stream: Stream | None = None) -> None:
        s = stream if stream is not None else get_current_stream()
        self._done.clear()

        def mark() -> None:
            self.time_ns = time.perf_counter_ns()
            self._done.set()
        s.enqueue(mark, data=False)

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def synchronize(self, timeout: float = SYNC_TIMEOUT) -> None:
        if not self._done.wait(timeout):
            raise WaitTimeout(f"emulated device: event not reached within {timeout:.0f}s")


def get_elapsed_time(start: Event, end: Event) -> float:
    """Milliseconds between two recorded, completed events (CuPy's signature)."""
    if not (start.timing and end.timing):
        raise CUDARuntimeError("cudaErrorInvalidResourceHandle: an event has timing disabled")
    start.synchronize()
    end.synchronize()
    return (end.time_ns - start.time_ns) / 1e6


# -- pinned host memory ------------------------------------------------------------------------
_pinned: dict[int, int] = {}  # start address -> end address
_pinned_lock = threading.Lock()


class PinnedMemory(bytearray):
    """Page-locked host memory (here: host bytes registered as pinned); supports the
    buffer protocol like CuPy's pinned memory pointer (``numpy.frombuffer``)."""

    def __init__(self, size: int) -> None:
        super().__init__(max(1, size))
        self.ptr = np.frombuffer(self, np.uint8).ctypes.data
        self.size = size
        runtime.hostRegister(self.ptr, self.size, 0)

    def __del__(self) -> None:
        runtime.hostUnregister(self.ptr)


def alloc_pinned_memory(size: int) -> PinnedMemory:
    return PinnedMemory(size)


def is_pinned(a: np.ndarray) -> bool:
    addr = a.__array_interface__["data"][0]
    with _pinned_lock:
        return any(s <= addr and addr + a.nbytes <= e for s, e in _pinned.items())


def copy_on_stream(stream: Stream | None, dst: np.ndarray, src: np.ndarray,
                   pinned_host: np.ndarray) -> None:
    """A host<->device copy: queued on a (non-null) stream when the host side is pinned,
    otherwise done now after the stream's earlier work (pageable memory: synchronous)."""
    s = stream if stream is not None else getattr(_local, "stream", None)
    if s is not None and not s.null and is_pinned(pinned_host):
        s.enqueue(lambda: np.copyto(dst, src, casting="no"))
        return
    wait_current_stream(s)
    np.copyto(dst, src, casting="no")


class _Runtime:
    """``xp.cuda.runtime``: the calls actorflow makes."""

    CUDARuntimeError = CUDARuntimeError

    def getDeviceCount(self) -> int:
        return device_count()

    def hostRegister(self, ptr: int, size: int, flags: int) -> None:
        with _pinned_lock:
            _pinned[int(ptr)] = int(ptr) + int(size)

    def hostUnregister(self, ptr: int) -> None:
        with _pinned_lock:
            _pinned.pop(int(ptr), None)

    def deviceSynchronize(self) -> None:
        Device().synchronize()


runtime = _Runtime()


from actorflow.streams.emulated.ipc import (  # noqa: E402  (xp.cuda.ipc_*: shared memory)
    ipc_alloc,
    ipc_close,
    ipc_open,
    ipc_view,
)

__all__ = ["ipc_alloc", "ipc_close", "ipc_open", "ipc_view"]  # re-exported here
