"""``xp.cuda`` of the emulated device: devices, streams with their own thread, events,
pinned host memory and the runtime calls actorflow uses — the names and meanings of CuPy's.

A ``Stream`` owns a device thread, and everything issued on it runs there, in issue
order, as on a GPU:

- a **kernel** (any ``xp`` function or array method called while the stream is current)
  is computed on the stream's thread; the caller waits only to learn the result's shape
  and dtype, and gets an array that holds poison (NaN, or 0xA5 bytes) until the stream
  reaches the kernel's *publish* step, which writes the values.  So a consumer on another
  stream that does not wait for the producer's event reads poison, as it would read
  unfinished memory on a GPU;
- a **copy** between a device array and *pinned* host memory (``dev.set(pinned,
  stream)``, ``dev.get(stream, out=pinned)``) is queued and happens later, as a DMA
  engine would do it; pageable copies are synchronous (after the stream's earlier work);
- an ``Event`` recorded on a stream becomes ``done`` when the thread reaches it.

With no current stream (the legacy default stream) a kernel runs at once on the calling
thread, after the current stream's queued writes.  A kernel refuses operands that live
on another device than the current one, and a current stream that belongs to another
device (CUDA's "invalid resource handle"): a unit that launched under the wrong device
fails here as it would on a GPU.

The device count is ``ACTORFLOW_EMULATED_DEVICES`` (default 2).
``ACTORFLOW_EMULATED_LATENCY_US`` makes the device thread wait that long before each piece
of queued work (a slow device): tests use it to show that nothing reads a regst before
its event is done.
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

    def run_now(self, fn: Callable[[], None], timeout: float = SYNC_TIMEOUT) -> None:
        """Queue ``fn`` (reading and writing nothing the stream orders) and wait until the
        device thread ran it: a kernel's compute, whose result the caller needs now."""
        ran = threading.Event()

        def step() -> None:
            try:
                fn()
            finally:
                ran.set()

        self.enqueue(step, data=False)
        if not ran.wait(timeout):
            raise WaitTimeout(f"emulated device {self.device_id}: a kernel did not run on "
                              f"its stream within {timeout:.0f}s")

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

    def wait_event(self, event: Event) -> None:
        """Work queued on this stream after this call waits until ``event`` is done (CuPy's
        ``Stream.wait_event``: how one stream consumes what another produced)."""
        self.enqueue(lambda: event.synchronize(), data=False)

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


def launch(fn: Callable[..., Any], args: tuple, kwargs: dict, ops: list, device: int,
           result: Any, value_shaped: bool) -> Any:
    """One kernel: ``fn`` on numpy data (``args``/``kwargs`` unwrapped), operands ``ops``
    (device arrays, already on ``device``); ``result`` is what a kernel that writes into
    an operand returns (``array.PURE``: it makes its result).  On a stream everything runs
    on the stream's thread, in issue order (see the module docstring)."""
    from actorflow.streams.emulated.array import PURE, wrap

    s = getattr(_local, "stream", None)
    if s is None or s.null:  # the legacy default stream: at once, on this thread
        wait_current_stream(s)
        r = fn(*args, **kwargs)
        return wrap(r, device) if result is PURE else result
    if s.device_id != device:
        raise CUDARuntimeError(f"cudaErrorInvalidResourceHandle: a kernel launched on a "
                               f"stream of device {s.device_id} while device {device} is "
                               "current (emulated device: make the stream's device current)")

    def run() -> Any:
        with np.errstate(all="ignore"):  # a device kernel warns nobody
            return fn(*args, **kwargs)

    if result is not PURE:  # it writes into an operand: queued, the caller goes on
        s.enqueue(run)
        return result
    if value_shaped:  # its shape depends on the values: the caller waits for the stream
        return wrap(_run_now(s, run), device)
    # What does it return?  Computed here on whatever the memory holds now, and thrown away:
    # only its kind, shape and dtype (or that it is a view of an operand) are used.
    try:
        probe = run()
    except Exception:  # a shape error, or values that only the unfinished memory holds:
        return wrap(_run_now(s, run), device)  # run it in stream order, and wait for it
    if not _is_arrays(probe):
        return _run_now(s, run)  # a host value (item(), tolist()): the caller waits for it
    if _views_only(probe, ops):
        return wrap(probe, device)  # views (reshape, transpose, slices): no kernel
    bufs = _fresh(probe)

    def publish() -> None:
        made = run()
        for buf, value in zip(bufs, made if isinstance(made, (tuple, list)) else (made,)):
            np.copyto(buf, value, casting="no")

    s.enqueue(publish)
    out = [ndarray_of(b, device) for b in bufs]
    return type(probe)(out) if isinstance(probe, (tuple, list)) else out[0]


def _run_now(s: Stream, run: Callable[[], Any]) -> Any:
    box: dict[str, Any] = {}

    def step() -> None:
        try:
            box["value"] = run()
        except BaseException as e:  # raised to the caller below
            box["error"] = e

    s.run_now(step)
    if "error" in box:
        raise box["error"]
    return box["value"]


def _is_arrays(r: Any) -> bool:
    parts = r if isinstance(r, (tuple, list)) else (r,)
    return bool(parts) and all(isinstance(x, (np.ndarray, np.generic)) for x in parts)


def _views_only(r: Any, ops: list) -> bool:
    parts = r if isinstance(r, (tuple, list)) else (r,)
    return all(isinstance(x, np.ndarray) and any(np.may_share_memory(x, v._a) for v in ops)
               for x in parts)


def _fresh(r: Any) -> list[np.ndarray]:
    """Poisoned arrays shaped like ``r``'s parts, for a kernel's results to land in."""
    bufs = []
    for x in r if isinstance(r, (tuple, list)) else (r,):
        b = np.empty_like(np.asarray(x))
        poison(b)
        bufs.append(b)
    return bufs


def ndarray_of(a: np.ndarray, device: int) -> Any:
    from actorflow.streams.emulated.array import ndarray

    return ndarray._of(a, device)


def poison(a: np.ndarray) -> None:
    """Fill ``a`` with what unfinished device memory reads as here: NaN, or 0xA5 bytes."""
    if a.dtype.kind in "fc":
        a.fill(np.nan)
    elif a.size:
        a.ravel(order="K").view(np.uint8).fill(0xA5)  # a view: empty_like is contiguous


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
