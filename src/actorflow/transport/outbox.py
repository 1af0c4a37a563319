"""Outbox: one ``Comm`` per peer address, made on first use, shared by a process's senders.

A sender always reaches a given peer through the same comm, so messages of one sender
pair stay FIFO (ZeroMQ keeps order per socket).  Comms lock around each send, so unit
threads may share an outbox.  Every comm gets the outbox's ``Security`` and ``Limits``.
"""

from __future__ import annotations

import threading

from actorflow.errors import CommClosed
from actorflow.transport.comm import Comm, connect
from actorflow.transport.limits import Limits
from actorflow.transport.security import Security


class Outbox:
    """``comm(address)`` -> the one push comm to that listener."""

    def __init__(self, name: str = "", security: Security | None = None,
                 limits: Limits | None = None) -> None:
        self.name = name
        self.security = security
        self.limits = limits
        self._comms: dict[str, Comm] = {}
        self._lock = threading.Lock()
        self.closed = False

    def comm(self, address: str) -> Comm:
        c = self._comms.get(address)
        if c is None:
            with self._lock:
                if self.closed:
                    raise CommClosed(f"{self.name}: outbox closed; cannot send to {address}")
                c = self._comms.get(address)
                if c is None:
                    c = connect(address, security=self.security, limits=self.limits,
                                name=f"{self.name} -> {address}")
                    self._comms[address] = c
        return c

    def connect(self, address: str) -> None:
        """Open the comm to ``address`` now (so the first message does not pay for it)."""
        self.comm(address)

    def send(self, address: str, kind: int, body: object, arrays: list | tuple = ()) -> None:
        self.comm(address).send(kind, body, arrays)

    def close(self, linger_ms: int = 2000) -> None:
        """Close every comm; ``linger_ms`` bounds how long unsent messages may flush."""
        with self._lock:
            self.closed = True
            comms, self._comms = self._comms, {}
        for c in comms.values():
            c.close(linger_ms)
