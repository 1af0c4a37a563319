"""Data-plane sends driven from C: the compiled core's libzmq driver on transport's comms.

A READY that leaves the machine carries its regst's bytes as frames.  With the compiled
core a process unit sends them through ``_core/_zq`` (libzmq's C API in pyzmq's own
library): the comm, its socket, its CURVE keys and its limits are still ``transport/``'s,
the frames of a regst go without a copy (libzmq reads the shared-memory slot until it has
written it out, and the slot is not rewritten before the consumer's ACK, which comes after
the bytes arrived), and any wait for room is bounded and releases the GIL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from actorflow._core._zq import ZqSocket
    from actorflow.transport.comm import Comm

SEND_TIMEOUT = 60.0  # s a send may wait for room (the outbox's comms queue without bound)


def unavailable() -> str | None:
    """Why sends cannot go through the C driver here (None: they can)."""
    from actorflow import _core

    if _core.core_name() != "native":
        return "the Python core runs"
    try:
        from actorflow._core import _zq  # noqa: F401
    except ImportError as e:
        return f"the compiled libzmq driver is not built ({e})"
    return None


class NativeSender:
    """Sends whole messages on transport comms through the C driver (one per comm)."""

    def __init__(self) -> None:
        from actorflow._core import _zq
        from actorflow.transport.registry import libzmq_file

        _zq.load(libzmq_file())
        self._zq = _zq
        self._socks: dict[int, ZqSocket] = {}
        self.sent = 0  # messages sent this way (benches and tests look)

    def send(self, comm: Comm, frames: list[Any]) -> None:
        z = self._socks.get(id(comm))
        if z is None:
            z = self._socks[id(comm)] = self._zq.ZqSocket(comm.handle, comm, comm.name)
        with comm.send_lock:  # thread units of a machine share the outbox's comms
            z.send(frames, SEND_TIMEOUT)
        self.sent += 1

    def in_flight(self) -> int:
        """Zero-copy frames libzmq still reads."""
        return self._zq.zero_copy_in_flight()
