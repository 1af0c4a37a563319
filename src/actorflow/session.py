"""Session: run a plan's actors in this process and talk to them, one API for every plan.

    with actorflow.Session(plan) as s:          # a plan of one job
        y = s.run({"x": x})                     # one piece
        ys = list(s.run_many(feeds))            # many pieces, pipelined
        outs = s.run_to_end(pieces=10)          # a source-driven plan

    with actorflow.Session(af.compile([update, evaluate])) as s:   # a plan of several jobs
        s.run("update", {"x": x})               # one piece of job 'update'
        y = s.run("eval")                       # reads the variable update just changed
        fut = s.submit("eval")                  # a concurrent.futures.Future
        s.save("ckpt/"); s.load("ckpt/")        # model-IO jobs, re-sharding on load

    with actorflow.ClusterSession(plan, unit="process", scheme="tcp") as s:
        ...                                     # the same API, one MachineNode per machine

What each kind of plan offers (a method that does not apply raises a ``UsageError``
saying what to call instead):

    method                          a plan of one job            a plan of several jobs
    run([job,] feeds, timeout=)     one piece (job: its name,    one piece of job (job may be
                                    may be left out)             left out if there is one)
    run_many([job,] feeds, window=) pieces in order              pieces of job in order
    jobs                            [its name]                   the jobs' names
    feed(feeds), fetch()            a piece in, the next out     -- use submit / run
    run_to_end(pieces=)             a source-driven plan         -- use run per piece
    submit(job, feeds)              -- use feed/fetch            a future of its outputs
    save(dir), load(dir)            -- af.compile([job])         checkpoints of variables
    close(), with                   drain with EORD, stop every thread, raise the run's error

The session core (this class) owns the life cycle: the runtime hosting the actors, the
diagnostics, the drain on close.  Requests go through one client chosen by the plan:
``actors.piece_client.PieceClient`` (pieces fed and fetched in order) or
``actors.job_client.JobClient`` (jobs by name under the main job).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Future
from types import TracebackType
from typing import Any, overload

from actorflow.actors.cluster import nodes
from actorflow.actors.hosting import Deliver, Recorder, Runtime, RuntimeFactory
from actorflow.actors.job_client import JobClient
from actorflow.actors.piece_client import PieceClient
from actorflow.actors.runtime import MachineRuntime
from actorflow.errors import ActorflowError, UsageError
from actorflow.plan.model import Plan
from actorflow.trace.diagnostics import Diagnostics

Feeds = Mapping[str, Any]

# what to call instead, for the methods a kind of plan does not offer
_ONE_JOB = {
    "submit": "a plan of one job takes pieces in order: feed(feeds) then fetch(), or "
              "run_many(feeds) to keep several in flight",
    "save": "checkpoints need a plan compiled from a list of jobs, af.compile([job, ...]), "
            "which adds the jobs that save and load every variable",
}
_ONE_JOB["load"] = _ONE_JOB["save"]
_SEVERAL_JOBS = {
    "feed": "a plan of several jobs takes each piece by job name: submit(job, feeds) returns "
            "a future of its outputs, run(job, feeds) waits for them",
    "run_to_end": "a plan of several jobs runs one piece per request: run(job, feeds), or "
                  "run_many(job, feeds) for many",
}
_SEVERAL_JOBS["fetch"] = _SEVERAL_JOBS["feed"]


class Session:
    """Runs every task of ``plan`` on threads of this process (all machines simulated),
    or on what ``runtime`` builds; one API for plans of one job and of several (above).

    Thread safety: ``run`` is atomic; on a plan of one job, ``feed``/``fetch`` pieces
    belong to the thread that fed them (another thread gets a ``UsageError``); on a plan
    of several jobs, any thread may call ``run``/``submit`` at any time and the main job's
    lock keeps conflicting jobs apart.
    """

    def __init__(
        self,
        plan: Plan,
        *,
        timeout: float = 60.0,
        recorder: Recorder | None = None,
        validate: bool = True,
        trace: str | os.PathLike | None = None,
        stall_timeout: float | None = None,
        flight: bool = True,
        runtime: RuntimeFactory | None = None,
    ) -> None:
        """``timeout`` bounds every wait for a piece; ``trace=DIR`` records every event to
        DIR (``flowlaunch trace ...`` reads it); the flight recorder (last 1024 events per
        unit) is always on unless ``flight=False`` and is dumped when the run fails, stalls
        or gets SIGUSR1; ``stall_timeout`` starts a watchdog that fails a run in which no
        actor progressed for that many seconds; ``runtime`` builds what hosts the actors
        (default: every machine on threads of this process;
        ``actorflow.actors.cluster.nodes(...)``: one MachineNode per machine)."""
        if validate:
            plan.validate()
        if recorder is not None and trace is not None:
            raise UsageError("Session: pass either recorder= or trace=, not both")
        self.diagnostics = Diagnostics(plan, trace=trace, stall_timeout=stall_timeout,
                                       flight=flight and recorder is None)
        if recorder is None:
            recorder = self.diagnostics.recorder
        self.plan = plan
        self.timeout = timeout
        self._pieces: PieceClient | None = None
        self._jobs: JobClient | None = None
        client: PieceClient | JobClient
        if plan.is_multi_job:
            client = self._jobs = JobClient(plan, timeout)
        else:
            client = self._pieces = PieceClient(plan, timeout)
        self._closed = False
        make = runtime or _threads
        self.runtime: Runtime = make(plan, recorder, client.on_deliver)
        client.attach(self.runtime)
        self.diagnostics.attach(self.runtime.actor_states, self.runtime.fail)
        self.runtime.start()

    # -- context manager ---------------------------------------------------------------
    def __enter__(self) -> Session:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc is None:
            self.close()
            return
        try:
            self.close()
        except ActorflowError:
            pass  # the body's exception is the one the user needs to see

    # -- every plan ----------------------------------------------------------------------
    @property
    def jobs(self) -> list[str]:
        """The names ``run``/``run_many``/``submit`` take (a plan of one job: its name)."""
        if self._jobs is not None:
            return self._jobs.jobs
        return [self.plan.job.name]

    @overload
    def run(self, feeds: Feeds | None = None, /, *, timeout: float | None = None) -> Any: ...
    @overload
    def run(self, job: str, feeds: Feeds | None = None, *,
            timeout: float | None = None) -> Any: ...

    def run(self, job: str | Feeds | None = None, feeds: Feeds | None = None, *,
            timeout: float | None = None) -> Any:
        """One piece: its output (one array), its outputs (a dict by name), or None (a job
        without outputs).  ``job`` names the job; it may be left out where the plan has
        one.  ``timeout`` (default: the session's) bounds the wait for the outputs."""
        name, feeds = _job_first(job, feeds, "run")
        if self._jobs is not None:
            return self._jobs.run(name, feeds, timeout)
        self._one_job(name)
        return self._client_of_pieces("run").run(feeds if feeds is not None else {}, timeout)

    @overload
    def run_many(self, feeds: Iterable[Feeds], /, *, window: int = 8) -> Iterator[Any]: ...
    @overload
    def run_many(self, job: str, feeds: Iterable[Feeds], *,
                 window: int = 8) -> Iterator[Any]: ...

    def run_many(self, job: str | Iterable[Feeds], feeds: Iterable[Feeds] | None = None, *,
                 window: int = 8) -> Iterator[Any]:
        """Many pieces with up to ``window`` in flight; yields their outputs in order."""
        if isinstance(job, str):
            name: str | None = job
            if feeds is None:
                raise UsageError(f"Session.run_many({job!r}, feeds): give the feeds of every "
                                 "piece (an iterable of mappings; {} for a job without inputs)")
        elif feeds is not None:
            raise UsageError("Session.run_many(feeds) or run_many(job, feeds): the first "
                             f"argument is a {type(job).__name__}, not a job name")
        else:
            name, feeds = None, job
        if self._jobs is not None:
            return self._jobs.run_many(name, feeds, window)
        self._one_job(name)
        return self._client_of_pieces("run_many").run_many(feeds, window)

    def close(self) -> None:
        """Drain with EORD and stop every thread; raises the run's error if it failed."""
        try:
            if self.runtime.error is None and not self.runtime.stopping:
                if not self._closed:
                    self._drain()
                    self._closed = True
                try:
                    self.runtime.wait_exited(self.timeout)
                finally:
                    self.diagnostics.close(self.runtime.error or sys.exc_info()[1])
                    self.runtime.join()
            else:
                self._closed = True
                self.diagnostics.close(self.runtime.error)
                self.runtime.join()
        finally:
            if self._jobs is not None:  # nobody waits forever on a request of a closed run
                self._jobs.fail_all(self.runtime.error)
        if self.runtime.error is not None:
            raise self.runtime.error

    # -- a plan of one job ---------------------------------------------------------------
    def feed(self, feeds: Feeds) -> int:
        """Hand one piece to the input actors without waiting; returns its piece id."""
        return self._client_of_pieces("feed").feed(feeds)

    def fetch(self, timeout: float | None = None) -> Any:
        """The next piece's outputs: one array if the plan has one output, else a dict."""
        return self._client_of_pieces("fetch").fetch(timeout)

    def run_to_end(self, pieces: int | None = None) -> dict[str, list[Any]]:
        """Start the source actors (``pieces`` each, default their own count), drain the
        plan, and return every output piece by output name."""
        client = self._client_of_pieces("run_to_end")
        client.start_sources(pieces)
        self._closed = True
        self.runtime.wait_exited(self.timeout)
        results = client.collect()
        self.diagnostics.close()
        self.runtime.join()
        return results

    # -- a plan of several jobs ----------------------------------------------------------
    def submit(self, job: str, feeds: Feeds | None = None) -> Future:
        """Start one piece of ``job``; the future's result is its outputs by name."""
        return self._client_of_jobs("submit").submit(job, feeds)

    def save(self, directory: str | os.PathLike) -> str:
        """Write every variable (each device part + a manifest) to ``directory``."""
        return self._client_of_jobs("save").save(directory)

    def load(self, directory: str | os.PathLike) -> None:
        """Set every variable from a checkpoint saved on any number of machines."""
        self._client_of_jobs("load").load(directory)

    # -- internals ---------------------------------------------------------------------
    def _client_of_pieces(self, what: str) -> PieceClient:
        if self._pieces is None:
            raise UsageError(f"Session.{what}: {_SEVERAL_JOBS.get(what, 'not offered')}")
        return self._pieces

    def _client_of_jobs(self, what: str) -> JobClient:
        if self._jobs is None:
            raise UsageError(f"Session.{what}: {_ONE_JOB[what]}")
        return self._jobs

    def _one_job(self, name: str | None) -> None:
        """A job name given to a plan of one job must be that job's."""
        if name is not None and name != self.plan.job.name:
            raise UsageError(f"the plan has no job {name!r}; its jobs: {self.jobs}")

    def _drain(self) -> None:
        if self._jobs is not None:
            self._jobs.close_ids()
        elif self._pieces is not None:
            self._pieces.close_inputs()
            self._pieces.stop_sources()


def _job_first(job: str | Feeds | None, feeds: Feeds | None,
               what: str) -> tuple[str | None, Feeds | None]:
    """``(job, feeds)`` from ``f(feeds)`` or ``f(job, feeds)``."""
    if isinstance(job, str):
        return job, feeds
    if job is not None and feeds is not None:
        raise UsageError(f"Session.{what}(feeds) or {what}(job, feeds): the first argument "
                         f"is a {type(job).__name__}, not a job name")
    if job is not None and not isinstance(job, Mapping):
        raise UsageError(f"Session.{what}: feeds must be a mapping of input name -> array, "
                         f"got {type(job).__name__}")
    return None, job if job is not None else feeds


def _threads(plan: Plan, recorder: Recorder | None, on_deliver: Deliver) -> MachineRuntime:
    """The default runtime: every machine of the plan on unit threads of this process."""
    return MachineRuntime(plan, recorder=recorder, on_deliver=on_deliver)


class ClusterSession(Session):
    """A Session whose machines are MachineNodes talking over ``scheme`` sockets, their
    units threads or (``unit="process"``) processes: the data plane of ``flowlaunch sim``
    in one process, for tests and benches.  The same API as ``Session``, for every plan."""

    def __init__(self, plan: Plan, *, unit: str = "thread", scheme: str = "tcp",
                 timeout: float = 60.0, validate: bool = True,
                 trace: str | os.PathLike | None = None,
                 stall_timeout: float | None = None) -> None:
        super().__init__(plan, timeout=timeout, validate=validate, trace=trace,
                         stall_timeout=stall_timeout,
                         runtime=nodes(unit=unit, scheme=scheme, timeout=timeout))


__all__ = ["ClusterSession", "Session"]
