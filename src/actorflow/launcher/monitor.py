"""The launcher's view of the master: progress lines while running, the final summary.

A "dealer" comm that says ``watch`` to the master (rank 0), handing over the plan the
launcher compiled (so it is compiled and validated once), and then receives ``progress``
messages about once a second and one ``final`` message (summary, the first error) that it
acknowledges.  Output pieces do not come this way (``sink.py``).  If rank 0 dies the
launcher still has its process table.
"""

from __future__ import annotations

import sys
import time
from typing import IO

from actorflow.errors import MalformedMessage
from actorflow.launcher.ports import resolve
from actorflow.launcher.report import progress_line
from actorflow.launcher.wire import CTRL, body_of
from actorflow.transport.comm import connect
from actorflow.transport.registry import tcp_address
from actorflow.transport.security import Security


class Monitor:
    def __init__(self, master_host: str, master_port: int, machines: int,
                 console: IO[str] | None = None, show_progress: bool = True,
                 plan: bytes | None = None, security: Security | None = None) -> None:
        self.machines = machines
        self.console = console if console is not None else sys.stderr
        self.show_progress = show_progress
        self.final: dict | None = None
        self.watching = False
        self.last_progress: dict | None = None
        self.plan = plan
        self._comm = connect(tcp_address(resolve(master_host), master_port), "dealer",
                             security=security, linger_ms=500, name="the launcher's monitor",
                             plane="control")
        self._last_watch = 0.0

    def poll(self, timeout: float) -> None:
        now = time.monotonic()
        if not self.watching and now - self._last_watch > 1.0:
            self._last_watch = now
            self._comm.send(CTRL, {"t": "watch", "plan": self.plan})
        m = self._comm.recv(timeout)
        while m is not None:
            try:
                msg = body_of(m, "the master")
            except MalformedMessage:
                m = self._comm.recv(0)
                continue
            m = self._comm.recv(0)
            t = msg["t"]
            if t == "watching":
                self.watching = True
            elif t == "progress":
                self.last_progress = msg
                if self.show_progress:
                    print(progress_line(msg, self.machines), file=self.console, flush=True)
            elif t == "final":
                self.final = msg
                self._comm.send(CTRL, {"t": "final_ack"})

    def close(self) -> None:
        self._comm.close(500)
