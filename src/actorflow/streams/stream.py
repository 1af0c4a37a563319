"""Streams: where an act's kernels run, and when the act counts as done.

A unit launches acts on its stream and sends the act's READY/ACK only for acts the
stream reports completed.  The CPU stream runs kernels inline and reports them done at
once; a CUDA stream (later) launches asynchronously and reports completion from events.
Both go through this same deferred path, so GPU support is a new stream, not a new loop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

_STREAMS: dict[str, Callable[[int], Stream]] = {}


class Stream:
    device = "cpu"
    synchronous = False  # True: launch() returns after the kernels ran (trace act_end there)
    xp: Any = np

    def launch(self, host: Any, act: Any) -> None:
        """Start ``host.run(act)``; report ``(host, act)`` from ``completed`` when done."""
        raise NotImplementedError

    def completed(self) -> list[Any]:
        """``(host, act)`` pairs of launched acts that finished, in launch order."""
        raise NotImplementedError

    def has_pending(self) -> bool:
        return False


class CpuStream(Stream):
    synchronous = True

    def __init__(self, device_index: int = 0) -> None:
        self._done: list[Any] = []

    def launch(self, host: Any, act: Any) -> None:
        host.executor(host, act)  # = host.run(act), one call less on the hot path
        self._done.append((host, act))

    def completed(self) -> list[Any]:
        done = self._done
        if done:
            self._done = []
        return done


def register_stream(device: str, factory: Callable[[int], Stream]) -> None:
    _STREAMS[device] = factory


def make_stream(mem_case: str = "host") -> Stream:
    """``host`` / ``cpu`` -> CPU stream; ``cuda:i`` -> the CUDA stream (CuPy, imported lazily)."""
    device, _, idx = mem_case.partition(":")
    device = "cpu" if device in ("host", "cpu") else device
    if device not in _STREAMS and device == "cuda":
        from actorflow.streams import cuda  # noqa: F401  (registers itself; needs CuPy)
    try:
        factory = _STREAMS[device]
    except KeyError:
        raise ValueError(f"no stream for device '{device}'; known: {sorted(_STREAMS)}") from None
    return factory(int(idx or 0))


register_stream("cpu", CpuStream)
