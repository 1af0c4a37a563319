"""The device stream: one CUDA stream per execution unit; an act is done when its event is.

Works on CuPy and on the emulated device alike (``streams/device.py`` picks one).  ``launch``
runs the act's kernels under ``with device, stream:`` (on a GPU they only *launch*) and
records an event after them; ``completed`` reports acts whose events are done, in launch
order, so the unit sends READY/ACK only after the device finished — no host sync on the
critical path.  When the unit is traced, a start event is recorded too and
``act_timing`` gives the host's launch time and the device's time of each act (``trace
summary`` shows both, so a device-bound actor can be told from a host-bound one).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import Any

from actorflow.streams.device import check_device
from actorflow.streams.stream import STREAMS


class DeviceStream:
    device = "cuda"
    synchronous = False
    _get_blocks = True  # get() takes blocking=False (CuPy >= 13, the emulated device)

    def __init__(self, device_index: int = 0) -> None:
        self.handle = dev = check_device(device_index, f"a unit on cuda:{device_index}")
        self.xp = xp = dev.xp
        self.device_index = device_index
        self._device = xp.cuda.Device(dev.index)
        self._stream = dev.new_stream()
        self._pending: deque[tuple[Any, Any, Any, Any]] = deque()
        self.timing = False  # set by a traced unit: record start events for device time
        self._wake: Callable[[], None] | None = None
        self._launch: dict[int, int] = {}  # act -> host ns spent launching it
        self._times: dict[int, tuple[int, int]] = {}  # act -> (launch ns, device ns)

    def launch(self, host: Any, act: Any) -> None:
        cuda = self.xp.cuda
        with self._device, self._stream:
            start = None
            if self.timing:
                t0 = time.perf_counter_ns()
                start = cuda.Event()
                start.record(self._stream)
            host.run(act)
            end = cuda.Event(disable_timing=not self.timing)
            end.record(self._stream)
            if start is not None:
                self._launch[id(act)] = time.perf_counter_ns() - t0
            if self._wake is not None:  # runs once the device passed the end event
                self._stream.launch_host_func(_wake_unit, self._wake)
        self._pending.append((end, start, host, act))

    def completed(self) -> list[tuple[Any, Any]]:
        done = []
        pending = self._pending
        while pending and pending[0][0].done:  # in launch order
            end, start, host, act = pending.popleft()
            if start is not None:
                ms = self.xp.cuda.get_elapsed_time(start, end)
                self._times[id(act)] = (self._launch.pop(id(act), -1), int(ms * 1e6))
            done.append((host, act))
        return done

    def has_pending(self) -> bool:
        return bool(self._pending)

    def to_device(self, dev: Any, host: Any) -> None:
        """Queue a host (pinned) -> device copy on this stream."""
        dev.set(host, stream=self._stream)

    def to_host(self, host: Any, dev: Any) -> None:
        """Queue a device -> host (pinned) copy on this stream (no host sync)."""
        if self._get_blocks:
            try:  # CuPy >= 13 blocks in get() unless told not to
                dev.get(stream=self._stream, out=host, blocking=False)
                return
            except TypeError:  # older CuPy: no 'blocking'; a given stream is asynchronous
                DeviceStream._get_blocks = False
        dev.get(stream=self._stream, out=host)

    def set_waker(self, wake: Callable[[], None]) -> None:
        self._wake = wake

    def act_timing(self, act: Any) -> tuple[int, int] | None:
        return self._times.pop(id(act), None)

    def close(self) -> None:
        self.handle.close_stream(self._stream)
        self._pending.clear()


def _wake_unit(wake: Callable[[], None]) -> None:
    """A host function on the device stream (no CUDA calls allowed here): wake the unit."""
    wake()


STREAMS.register("cuda", DeviceStream)
