"""The launcher's view of the master: progress lines while running, the final summary.

A DEALER socket that says ``watch`` to the master (rank 0) and then receives ``progress``
messages about once a second, output pieces as ``result`` messages as they are made, and
one ``final`` message (summary, the first error) that it acknowledges; ``final["results"]``
then holds every output piece.  If rank 0 dies the launcher still has its process table.
"""

from __future__ import annotations

import sys
import time
from typing import IO

import zmq

from actorflow.launcher import wire
from actorflow.launcher.ports import resolve
from actorflow.launcher.report import progress_line
from actorflow.transport.auth import secure_client


class Monitor:
    def __init__(self, master_host: str, master_port: int, machines: int,
                 console: IO[str] | None = None, show_progress: bool = True) -> None:
        self.machines = machines
        self.console = console if console is not None else sys.stderr
        self.show_progress = show_progress
        self.final: dict | None = None
        self.watching = False
        self.last_progress: dict | None = None
        self._results: dict[str, dict[int, dict]] = {}
        self._ctx = zmq.Context()
        self._sock = self._ctx.socket(zmq.DEALER)
        self._sock.linger = 500
        secure_client(self._sock)
        self._sock.connect(f"tcp://{resolve(master_host)}:{master_port}")
        self._last_watch = 0.0

    def poll(self, timeout: float) -> None:
        now = time.monotonic()
        if not self.watching and now - self._last_watch > 1.0:
            self._last_watch = now
            self._sock.send(wire.pack("watch"))
        if not self._sock.poll(int(timeout * 1000)):
            return
        while int(self._sock.getsockopt(zmq.EVENTS)) & zmq.POLLIN:
            msg = wire.unpack(self._sock.recv(), "the master")
            t = msg["t"]
            if t == "watching":
                self.watching = True
            elif t == "progress":
                self.last_progress = msg
                if self.show_progress:
                    print(progress_line(msg, self.machines), file=self.console, flush=True)
            elif t == "result":  # output pieces stream in as they are made
                self._results.setdefault(msg["name"], {})[int(msg["piece"])] = msg["blobs"]
            elif t == "final":
                for name, pieces in msg.get("results", {}).items():
                    self._results.setdefault(name, {}).update((int(p), b) for p, b in pieces)
                msg["results"] = {n: sorted(v.items()) for n, v in self._results.items()}
                self.final = msg
                self._sock.send(wire.pack("final_ack"))

    def close(self) -> None:
        self._sock.close()
        self._ctx.term()
