"""The deferred CPU stream: kernels run on a worker thread and complete later, like a GPU.

A unit on this stream launches an act and goes on handling messages; the act's READY/ACK
leave only after the worker finished it (``completed``), exactly the path a CUDA stream
takes, so CI runs the asynchronous completion path with no GPU.  A kernel error on the
worker is raised again by the next ``completed`` call on the unit's own thread.
"""

from __future__ import annotations

import itertools
import queue
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

from actorflow.errors import WaitTimeout
from actorflow.streams.stream import STREAMS

_ids = itertools.count()
_STOP = object()


class DeferredCpuStream:
    device = "cpu"
    synchronous = False
    xp: Any = np
    timing = False

    def __init__(self, device_index: int = 0) -> None:
        self._work: queue.SimpleQueue = queue.SimpleQueue()
        self._done: deque[tuple[Any, Any]] = deque()
        self._error: BaseException | None = None
        self._launched = 0
        self._reported = 0
        self._wake: Callable[[], None] | None = None
        self._thread: threading.Thread | None = None  # started by the first launch

    def _worker(self) -> None:
        while True:
            item = self._work.get()
            if item is _STOP:
                return
            host, act = item
            if self._error is not None:
                continue  # a failed act stops the stream: later acts never run
            try:
                host.run(act)
            except BaseException as e:  # handed to the unit thread by completed()
                self._error = e
            else:
                self._done.append((host, act))
            if self._wake is not None:
                self._wake()

    def launch(self, host: Any, act: Any) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._worker, daemon=True,
                                            name=f"actorflow-cpu-deferred-{next(_ids)}")
            self._thread.start()
        self._launched += 1
        self._work.put((host, act))

    def completed(self) -> list[tuple[Any, Any]]:
        if self._error is not None:
            raise self._error
        done = []
        while self._done:
            done.append(self._done.popleft())
        self._reported += len(done)
        return done

    def has_pending(self) -> bool:
        return self._reported < self._launched or self._error is not None

    def set_waker(self, wake: Callable[[], None]) -> None:
        self._wake = wake

    def act_timing(self, act: Any) -> tuple[int, int] | None:
        return None

    def close(self, timeout: float = 10.0) -> None:
        if self._thread is None or not self._thread.is_alive():
            return
        self._work.put(_STOP)
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise WaitTimeout(f"deferred CPU stream {self._thread.name}: the worker did not "
                              f"finish its acts within {timeout:.1f}s")


STREAMS.register("cpu-deferred", DeferredCpuStream)
