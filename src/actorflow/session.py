"""Session: run a Plan in this process and talk to its input/output actors.

    with actorflow.Session(plan) as s:
        y = s.run({"x": x})               # one piece
        ys = list(s.run_many(feeds))      # many pieces, pipelined
        outs = s.run_to_end(pieces=10)    # a source-driven plan

    with actorflow.ClusterSession(plan, unit="process", scheme="tcp") as s:
        ...                               # the same API, one MachineNode per machine

Leaving the ``with`` block closes the inputs so the EORD cascade drains every actor.
"""

from __future__ import annotations

import contextlib
import os
import queue
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from types import TracebackType
from typing import Any

import numpy as np

from actorflow.actors.cluster import nodes
from actorflow.actors.hosting import Deliver, Recorder, Runtime, RuntimeFactory
from actorflow.actors.runtime import MachineRuntime
from actorflow.errors import ActorflowError, SessionClosed, UsageError, WaitTimeout
from actorflow.plan.model import Plan, Task
from actorflow.trace.diagnostics import Diagnostics

_WAKE = object()


class Session:
    """Runs every task of ``plan`` on threads of this process (all machines simulated).

    Thread safety: ``run`` is atomic (calls from several threads are served one after
    another, each getting its own piece); ``feed``/``fetch`` pieces belong to the thread
    that fed them, and another thread feeding or fetching while they are in flight gets a
    ``UsageError`` instead of someone else's data.
    """

    def __new__(cls, plan: Plan | None = None, *args: Any, **kw: Any) -> Session:
        # a multi-job plan (af.compile([...])) is driven by job name: actorflow.job_session
        if cls is Session and getattr(plan, "is_multi_job", False):
            from actorflow.job_session import JobSession

            return super().__new__(JobSession)
        return super().__new__(cls)

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
        """``trace=DIR`` records every event to DIR (``flowlaunch trace ...`` reads it);
        the flight recorder (last 1024 events per unit) is always on unless ``flight=False``
        and is dumped when the run fails, stalls or gets SIGUSR1; ``stall_timeout`` starts
        a watchdog that fails a run in which no actor progressed for that many seconds;
        ``runtime`` builds what hosts the actors (default: every machine on threads of this
        process; ``actorflow.actors.cluster.nodes(...)``: one MachineNode per machine)."""
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
        self.inputs: dict[str, Task] = plan.input_tasks()
        self.outputs: dict[str, Task] = plan.output_tasks()
        self._by_task = {t.task_id: name for name, t in self.outputs.items()}
        self._results: dict[str, queue.Queue] = {n: queue.Queue() for n in self.outputs}
        self._fed = 0
        self._received = dict.fromkeys(self.outputs, 0)
        self._sources_started = False
        self._closed = False
        self._lock = threading.RLock()  # one caller at a time inside feed/fetch/run
        self._owner: int | None = None  # thread whose fed pieces are in flight
        self._in_flight = 0
        make = runtime or _threads
        self.runtime: Runtime = make(plan, recorder, self._on_deliver)
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

    # -- running -----------------------------------------------------------------------
    def feed(self, feeds: Mapping[str, Any]) -> int:
        """Hand one piece to the input actors without waiting; returns its piece id."""
        with self._locked("feed"):
            return self._feed(feeds)

    @contextlib.contextmanager
    def _locked(self, what: str) -> Iterator[None]:
        """The session lock, waited for at most ``timeout`` (another thread's piece)."""
        if not self._lock.acquire(timeout=self.timeout):
            raise WaitTimeout(f"Session.{what} waited {self.timeout:.1f}s for another thread's "
                              "call on this session to finish")
        try:
            yield
        finally:
            self._lock.release()

    def _claim(self, what: str) -> None:
        """Refuse a thread other than the one whose pieces are in flight (under the lock)."""
        me = threading.get_ident()
        if self._in_flight and self._owner != me:
            raise UsageError(
                f"Session.{what} from thread {threading.current_thread().name} while "
                f"{self._in_flight} piece(s) fed by another thread are in flight; a session's "
                "fed pieces belong to the feeding thread (use run(), which is atomic, or one "
                "Session per thread)")
        self._owner = me

    def _feed(self, feeds: Mapping[str, Any]) -> int:
        self._check_open()
        if not self.inputs:
            raise UsageError(
                f"plan '{self.plan.job.name}' has no input tasks: its source tasks make the "
                "pieces, so there is nothing to feed; use Session.run_to_end(pieces=N)")
        self._claim("feed")
        missing = set(self.inputs) - set(feeds)
        extra = set(feeds) - set(self.inputs)
        if missing or extra:
            raise UsageError(
                f"feeds must name exactly the plan's inputs {sorted(self.inputs)}; "
                f"missing {sorted(missing)}, unknown {sorted(extra)}")
        converted = {name: self._convert(name, value) for name, value in feeds.items()}
        for name, arrays in converted.items():
            self.runtime.push_feed(self.inputs[name].task_id, arrays)
        self._fed += 1
        self._in_flight += 1
        return self._fed - 1

    def fetch(self) -> Any:
        """The next piece's outputs: one array if the plan has one output, else a dict."""
        with self._locked("fetch"):
            self._check_failed()
            if self.inputs:
                if not self._in_flight:
                    raise UsageError("Session.fetch with no piece in flight: feed() one first")
                self._claim("fetch")
            out = {name: self._next_result(name) for name in self.outputs}
            self._in_flight -= 1 if self.inputs else 0
        if len(out) == 1:
            return next(iter(out.values()))
        return out

    def run(self, feeds: Mapping[str, Any]) -> Any:
        """Run one piece through the plan and return its outputs (atomic across threads)."""
        with self._locked("run"):
            self._feed(feeds)
            return self.fetch()

    def run_many(self, feeds: Iterable[Mapping[str, Any]], window: int = 8) -> Iterator[Any]:
        """Run many pieces with up to ``window`` in flight; yield outputs in order."""
        in_flight = 0
        for f in feeds:
            self.feed(f)
            in_flight += 1
            if in_flight >= window:
                yield self.fetch()
                in_flight -= 1
        for _ in range(in_flight):
            yield self.fetch()

    def run_to_end(self, pieces: int | None = None) -> dict[str, list[Any]]:
        """Start the source actors, drain the plan, and return every output piece."""
        self._check_open()
        sources = self.plan.tasks_by_type("source")
        if not sources:
            raise UsageError("run_to_end needs a plan with source tasks; use run() to feed inputs")
        for t in sources:
            n = pieces if pieces is not None else t.attrs.get("piece_num",
                                                              self.plan.job.num_pieces)
            if n is None:
                raise UsageError(f"source task {t.task_id} ({t.label}) has no piece count; "
                                 "pass pieces=")
            self.runtime.command(t.task_id, "start", int(n))
        self._sources_started = True
        self._close_inputs()
        self._closed = True
        self.runtime.wait_exited(self.timeout)
        results: dict[str, list[Any]] = {}
        for name, q in self._results.items():
            items = []
            while True:
                try:
                    item = q.get_nowait()
                except queue.Empty:
                    break
                if item is not _WAKE:
                    items.append(item[1])
            results[name] = items
        self.diagnostics.close()
        self.runtime.join()
        return results

    def close(self) -> None:
        """Drain with EORD and stop every thread; raises the run's error if it failed."""
        if self.runtime.error is None and not self.runtime.stopping:
            if not self._closed:
                self._close_inputs()
                for t in self.plan.tasks_by_type("source"):
                    self.runtime.command(t.task_id, "stop")
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
        if self.runtime.error is not None:
            raise self.runtime.error

    # -- internals ---------------------------------------------------------------------
    def _close_inputs(self) -> None:
        for t in self.inputs.values():
            self.runtime.command(t.task_id, "close")

    def _check_open(self) -> None:
        self._check_failed()
        if self._closed:
            raise SessionClosed("session is closed; open a new Session to run more pieces")

    def _check_failed(self) -> None:
        if self.runtime.error is not None:
            raise self.runtime.error

    def _convert(self, name: str, value: Any) -> dict[str, np.ndarray]:
        task = self.inputs[name]
        desc = next(iter(task.produced.values()))
        if not isinstance(value, Mapping):
            if len(desc.blobs) != 1:
                raise UsageError(f"input '{name}' has blobs {sorted(desc.blobs)}; feed a dict")
            value = {next(iter(desc.blobs)): value}
        out = {}
        for blob, b in desc.blobs.items():
            if blob not in value:
                raise UsageError(f"input '{name}': missing blob '{blob}'")
            arr = np.asarray(value[blob])
            if arr.shape != b.shape:
                raise UsageError(f"input '{name}': expected shape {b.shape} {b.dtype}, got "
                                 f"{arr.shape} {arr.dtype}")
            if arr.dtype != np.dtype(b.dtype):
                if not np.can_cast(arr.dtype, b.dtype, "same_kind"):
                    raise UsageError(f"input '{name}': expected dtype {b.dtype}, got "
                                     f"{arr.dtype} (not castable without loss of kind)")
                arr = arr.astype(b.dtype)
            elif arr is value[blob] or arr.base is not None:
                # the input actor copies it into a regst later, maybe after the caller has
                # refilled its buffer for the next piece: take a private copy now
                arr = arr.copy()
            out[blob] = arr
        return out

    def _on_deliver(self, task: Task | None, piece_id: int, arrays: dict) -> None:
        if task is None:
            for q in self._results.values():
                q.put(_WAKE)
            return
        name = self._by_task[task.task_id]
        value = next(iter(arrays.values())) if len(arrays) == 1 else arrays
        self._results[name].put((piece_id, value))

    def _next_result(self, name: str) -> Any:
        q = self._results[name]
        want = self._received[name]
        deadline = time.monotonic() + self.timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WaitTimeout(
                    f"waited {self.timeout:.1f}s for piece {want} of output '{name}'; "
                    f"still running: {self.runtime.describe_live()}")
            try:
                item = q.get(timeout=min(remaining, 0.5))
            except queue.Empty:
                continue
            if item is _WAKE:
                self._check_failed()
                continue
            piece, value = item
            self._received[name] += 1
            if piece != want:
                raise ActorflowError(f"output '{name}' delivered piece {piece}, expected {want}")
            return value


def _threads(plan: Plan, recorder: Recorder | None, on_deliver: Deliver) -> MachineRuntime:
    """The default runtime: every machine of the plan on unit threads of this process."""
    return MachineRuntime(plan, recorder=recorder, on_deliver=on_deliver)


class ClusterSession(Session):
    """A Session whose machines are MachineNodes talking over ``scheme`` sockets, their
    units threads or (``unit="process"``) processes: the data plane of ``flowlaunch sim``
    in one process, for tests and benches."""

    def __init__(self, plan: Plan, *, unit: str = "thread", scheme: str = "tcp",
                 timeout: float = 60.0, validate: bool = True,
                 trace: str | os.PathLike | None = None,
                 stall_timeout: float | None = None) -> None:
        super().__init__(plan, timeout=timeout, validate=validate, trace=trace,
                         stall_timeout=stall_timeout,
                         runtime=nodes(unit=unit, scheme=scheme, timeout=timeout))
