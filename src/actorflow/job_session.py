"""JobSession: an in-process Session over a multi-job plan, driving its jobs by name.

    plan = af.compile([update, evaluate], machines=2)
    with af.Session(plan) as s:              # a multi-job plan gives a JobSession
        s.run("update", {"x": x})            # one piece of job 'update'
        y = s.run("eval")                    # reads the variable update just changed
        ys = list(s.run_many("eval", ({} for _ in range(8))))
        fut = s.submit("eval")               # a concurrent.futures.Future
        s.save("ckpt/"); s.load("ckpt/")     # model-IO jobs, re-sharding on load

The requests themselves are ``actors.job_client.JobClient``'s; this class only adds the
Session's life cycle (actors on threads of this process, diagnostics, close with EORD).
Several threads may call it at once: the main job's lock keeps conflicting jobs apart.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Future
from typing import Any

from actorflow.actors.job_client import JobClient
from actorflow.errors import UsageError
from actorflow.plan.model import Plan, Task
from actorflow.session import Session

_BY_NAME = "a multi-job plan runs jobs by name: use submit/run/run_many(job, ...)"


class JobSession(Session):
    """A Session over a multi-job plan: ``run(job, feeds)``, ``run_many``, ``submit``."""

    def __init__(self, plan: Plan, **kw: Any) -> None:
        self.client = JobClient(plan, kw.get("timeout", 60.0))
        super().__init__(plan, **kw)
        self.client.attach(self.runtime)

    @property
    def jobs(self) -> list[str]:
        return sorted(self.client.jobs)

    def submit(self, job: str, feeds: Mapping[str, Any] | None = None) -> Future:
        """Start one piece of ``job``; the future's result is its outputs by name."""
        return self.client.submit(job, feeds)

    def run(self, job: Any, feeds: Mapping[str, Any] | None = None,  # type: ignore[override]
            timeout: float | None = None) -> Any:
        """One piece of ``job``: its output (one array), its outputs (a dict), or None."""
        return self.client.run(job, feeds, timeout)

    def run_many(self, job: Any,  # type: ignore[override]
                 feeds: Iterable[Mapping[str, Any]] | None = None,
                 window: int = 8) -> Iterator[Any]:
        """Many pieces of ``job`` with up to ``window`` in flight; outputs in order."""
        return self.client.run_many(job, feeds, window)

    def save(self, directory: str | os.PathLike) -> str:
        """Write every variable (each device part + a manifest) to ``directory``."""
        return self.client.save(directory)

    def load(self, directory: str | os.PathLike) -> None:
        """Set every variable from a checkpoint saved on any number of machines."""
        self.client.load(directory)

    def feed(self, feeds: Mapping[str, Any]) -> int:
        raise UsageError(_BY_NAME)

    def fetch(self) -> Any:
        raise UsageError(_BY_NAME)

    def run_to_end(self, pieces: int | None = None) -> dict[str, list[Any]]:
        raise UsageError(_BY_NAME)

    # -- the Session's hooks -----------------------------------------------------------
    def _on_deliver(self, task: Task | None, piece_id: int, arrays: dict) -> None:
        self.client.on_deliver(task, piece_id, arrays)

    def _close_inputs(self) -> None:
        self.client.close_ids()

    def close(self) -> None:
        try:
            super().close()
        finally:
            self.client.fail_all(self.runtime.error)


def cluster_job_session(plan: Plan, *, unit: str = "thread", scheme: str = "tcp",
                        timeout: float = 60.0, **kw: Any) -> JobSession:
    """A JobSession whose machines are MachineNodes over real sockets (``unit="process"``:
    every execution unit a process)."""
    from actorflow.actors.cluster import nodes

    return JobSession(plan, timeout=timeout, runtime=nodes(unit=unit, scheme=scheme,
                                                           timeout=timeout), **kw)


__all__ = ["JobSession", "cluster_job_session"]
