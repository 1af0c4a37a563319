"""Streams: where an act's kernels run, and when the act counts as done.

A unit launches acts on its stream and sends an act's READY/ACK only for acts the stream
reports completed.  Three streams share that one path:

- ``cpu``: kernels run inline in ``launch``; the act is done at once (``synchronous``);
- ``cpu-deferred``: kernels run on a worker thread and finish later, like a GPU, so the
  asynchronous completion path runs with no GPU (``ACTORFLOW_CPU_STREAM=deferred``);
- ``cuda``: kernels launch on a device stream (CuPy, or the emulated device) and the act is
  done when the event recorded after it is (``streams/cuda.py``).

Streams are registered by name in ``STREAMS``; ``make_stream(mem_case)`` gives a unit (or
a VM stream type of the eager VM, ``eager/instruction.py``) the one for its memory case.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from actorflow.errors import DeviceError
from actorflow.registry import Registry


class ActRunner(Protocol):
    """What a stream needs from an actor: run one act's kernels (``ActorHost``)."""

    def run(self, act: Any) -> None: ...


class Stream(Protocol):
    """Runs acts and reports them done in launch order."""

    device: str  # "cpu" or "cuda"
    synchronous: bool  # True: launch() returns after the kernels ran (trace act_end there)
    xp: Any  # the array module kernels get as ctx.xp
    timing: bool  # set when the unit is traced: measure each act (see ``act_timing``)

    def launch(self, host: ActRunner, act: Any) -> None:
        """Start ``host.run(act)``; report ``(host, act)`` from ``completed`` when done."""

    def completed(self) -> list[tuple[Any, Any]]:
        """``(host, act)`` of launched acts that finished, in launch order (raises the
        error of an act that failed)."""

    def has_pending(self) -> bool:
        """Launched acts not yet reported by ``completed``."""

    def set_waker(self, wake: Callable[[], None]) -> None:
        """Call ``wake()`` (from any thread) each time an act completes, so the unit
        waits for messages and completions at once instead of polling."""

    def act_timing(self, act: Any) -> tuple[int, int] | None:
        """``(host launch ns, device ns)`` of a completed act (device streams, measured
        when the unit is traced), None where there is none."""

    def close(self) -> None:
        """Finish launched work and free the stream's threads and handles."""


StreamFactory = Callable[[int], Stream]


def _load_builtin() -> None:
    from actorflow.streams import cuda, deferred  # noqa: F401  (they register themselves)


STREAMS: Registry[StreamFactory] = Registry("stream", loader=_load_builtin)


class CpuStream:
    """Kernels run inline in ``launch``; every act is done when ``launch`` returns."""

    device = "cpu"
    synchronous = True
    xp: Any = np
    timing = False

    def __init__(self, device_index: int = 0) -> None:
        self._done: list[tuple[Any, Any]] = []

    def launch(self, host: Any, act: Any) -> None:
        host.run(act)
        self._done.append((host, act))

    def completed(self) -> list[tuple[Any, Any]]:
        done = self._done
        if done:
            self._done = []
        return done

    def has_pending(self) -> bool:
        return False

    def set_waker(self, wake: Callable[[], None]) -> None:
        pass  # acts complete inside launch()

    def act_timing(self, act: Any) -> tuple[int, int] | None:
        return None

    def close(self) -> None:
        pass


STREAMS.register("cpu", CpuStream)


def register_stream(name: str, factory: StreamFactory) -> StreamFactory:
    """Add a stream by name (a duplicate name is a ``RegistryError``)."""
    return STREAMS.register(name, factory)

CPU_STREAM_ENV = "ACTORFLOW_CPU_STREAM"
_CPU_STREAMS = {"inline": "cpu", "deferred": "cpu-deferred"}


def cpu_stream_name() -> str:
    """The CPU stream ``ACTORFLOW_CPU_STREAM`` asks for (inline by default)."""
    choice = os.environ.get(CPU_STREAM_ENV, "inline") or "inline"
    try:
        return _CPU_STREAMS[choice]
    except KeyError:
        raise DeviceError(f"{CPU_STREAM_ENV}={choice!r}; expected one of "
                          f"{sorted(_CPU_STREAMS)}") from None


def make_stream(mem_case: str = "host") -> Stream:
    """The stream for units working in ``mem_case``: ``host``/``cpu`` -> the CPU stream
    (inline or deferred, see ``cpu_stream_name``); ``cuda:i`` -> a device stream on device
    ``i`` (CuPy, or the emulated device with ``ACTORFLOW_DEVICE=emulated``)."""
    device, _, idx = mem_case.partition(":")
    name = cpu_stream_name() if device in ("host", "cpu") else device
    try:
        index = int(idx or 0)
    except ValueError:
        raise DeviceError(f"memory case {mem_case!r}: device index {idx!r} is not a "
                          "number") from None
    return STREAMS.get(name)(index)
