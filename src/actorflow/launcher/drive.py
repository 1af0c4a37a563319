"""Rank 0 of a multi-job run: the job file's ``drive(session)`` over this machine's node.

Every main-job task and every job's inputs and outputs are on machine 0 (see
``plan/compiler/mainjob.py``), so the worker of rank 0 can be the client: it runs
``drive`` on a thread of its own with a JobClient attached to its MachineNode, then closes
the ids, which drains every machine with EORD.  ``drive``'s return value travels to the
launcher like output pieces (a dict of arrays or of lists of arrays; one array is
``result``), where the file's ``check`` reads it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from actorflow.actors.job_client import JobClient
from actorflow.errors import ActorflowError, LaunchError
from actorflow.plan.model import Plan


class Driver:
    def __init__(self, plan: Plan, drive: Callable[[Any], Any], source: str,
                 timeout: float = 60.0) -> None:
        self.client = JobClient(plan, timeout)
        self.drive = drive
        self.source = source
        self.error: BaseException | None = None
        self.result: Any = None
        self.finished = threading.Event()
        self._taken = False
        self._thread: threading.Thread | None = None

    def start(self, node: Any) -> None:
        self.client.attach(node)
        self._thread = threading.Thread(target=self._main, name="flowlaunch-drive", daemon=True)
        self._thread.start()

    def _main(self) -> None:
        try:
            self.result = self.drive(self.client)
        except ActorflowError as e:
            self.error = e
        except Exception as e:  # the job file's own bug: name the file and the error
            err = LaunchError(f"{self.source}: drive(session) failed: {type(e).__name__}: {e}")
            err.__cause__ = e
            self.error = err
        finally:
            if self.error is None:
                self.client.close_ids()  # no more requests: EORD drains every machine
            self.finished.set()

    def poll(self, wait: float = 0.0) -> list[tuple[str, int, dict]]:
        """Raise drive's error; once it finished, its result as (name, piece, blobs) once."""
        if wait:
            self.finished.wait(wait)
        if self.error is not None:
            raise self.error
        if not self.finished.is_set() or self._taken:
            return []
        self._taken = True
        return _pieces(self.result)

    def stop(self) -> None:
        """The run is over (or failed): fail the requests drive still waits for."""
        self.client.fail_all(None)
        if self._thread is not None:
            self._thread.join(5.0)


def _pieces(result: Any) -> list[tuple[str, int, dict]]:
    if result is None:
        return []
    items = result.items() if isinstance(result, dict) else [("result", result)]
    out = []
    for name, value in items:
        values = value if isinstance(value, (list, tuple)) else [value]
        for i, v in enumerate(values):
            try:
                # one piece as a batch of one (arrays of shape (1, *blob)), like output pieces
                out.append((str(name), i, {"out": np.asarray(v)[None]}))
            except (TypeError, ValueError) as e:
                raise LaunchError(f"drive(session) returned '{name}' that is not arrays: "
                                  f"{e}") from e
    return out
