"""A process unit's status line: its actors' wait states, answered from a helper thread.

The unit's main thread may be inside a kernel that never returns, which is exactly when
the node's watchdog and ``trace why-stuck`` need to know what every actor waits for.  So
each unit process binds a second ``ipc://`` socket that only carries STATUS queries and a
daemon thread answers them with ``MachineRuntime.actor_states()`` (read across threads,
as the thread units' watchdog does) while the main loop is busy.  The reply is a STATES
message ``[thrd_id, states, query_id]`` to the node.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from actorflow.actors import unit_wire as uw
from actorflow.errors import ActorflowError
from actorflow.transport.comm import listen


class StatusResponder:
    """Binds ``address`` now (before the unit says HELLO) and answers in a thread."""

    def __init__(self, address: str, name: str, states: Callable[[], list[dict]],
                 reply: Callable[[Any, list[dict]], None]) -> None:
        """``states()``: every actor's ``blocked_on()``; ``reply(query_id, states)``."""
        self.states, self.reply = states, reply
        self.inbox = listen(address, name=f"{name} status line")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._main, name=f"actorflow-status {name}",
                                        daemon=True)
        self._thread.start()

    def snapshot(self) -> list[dict]:
        """The states, retried while the main thread mutates a container being read."""
        for _ in range(50):
            try:
                return self.states()
            except RuntimeError:
                time.sleep(0.001)
        return []

    def _main(self) -> None:
        inbox = self.inbox
        try:
            while not self._stop.is_set():
                m = inbox.recv(0.1)
                if m is not None and m.kind == uw.STATUS:
                    self.reply(m.body, self.snapshot())
        except ActorflowError:
            pass  # the unit is shutting down: the node stops asking
        finally:
            inbox.close()

    def close(self, timeout: float = 2.0) -> None:
        self._stop.set()
        self._thread.join(timeout)
