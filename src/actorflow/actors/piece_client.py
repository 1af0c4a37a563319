"""PieceClient: feed and fetch the pieces of a plan of one job over any runtime.

    client = PieceClient(plan, timeout=60)
    client.attach(runtime)                  # MachineRuntime, NodeGroup: push_feed, command
    k = client.feed({"x": x}); y = client.fetch()   # piece k, in order
    y = client.run({"x": x})                # the same, atomic across threads
    outs = client.start_sources(pieces=10)  # a source-driven plan: then collect()

The counterpart of ``job_client.JobClient`` (the jobs of a multi-job plan by name):
``af.Session`` holds one of the two and offers one API over both.  Pieces come back in
the order they were fed; the pieces fed by one thread belong to it until fetched.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from actorflow.errors import InternalError, SessionClosed, UsageError, WaitTimeout
from actorflow.plan.model import Plan, Task

_WAKE = object()


class PieceClient:
    """Pieces of a one-job plan: ``feed``/``fetch``, ``run``, ``run_many``, sources.

    Thread safety: ``run`` is atomic (calls from several threads are served one after
    another, each getting its own piece); ``feed``/``fetch`` pieces belong to the thread
    that fed them, and another thread feeding or fetching while they are in flight gets a
    ``UsageError`` instead of someone else's data.
    """

    def __init__(self, plan: Plan, timeout: float = 60.0) -> None:
        if plan.is_multi_job:
            raise UsageError("feeding pieces needs a plan of one job; a multi-job plan "
                             "runs its jobs by name (actors.job_client.JobClient)")
        self.plan = plan
        self.timeout = timeout
        self.runtime: Any = None
        self.inputs: dict[str, Task] = plan.input_tasks()
        self.outputs: dict[str, Task] = plan.output_tasks()
        self._by_task = {t.task_id: name for name, t in self.outputs.items()}
        self._results: dict[str, queue.Queue] = {n: queue.Queue() for n in self.outputs}
        self._fed = 0
        self._received = dict.fromkeys(self.outputs, 0)
        self._closed = False
        self._lock = threading.RLock()  # one caller at a time inside feed/fetch/run
        self._owner: int | None = None  # thread whose fed pieces are in flight
        self._in_flight = 0

    def attach(self, runtime: Any) -> None:
        """The runtime pieces go to (``push_feed``, ``command``, ``error``)."""
        self.runtime = runtime

    # -- requests ----------------------------------------------------------------------
    def feed(self, feeds: Mapping[str, Any]) -> int:
        """Hand one piece to the input actors without waiting; returns its piece id."""
        with self._locked("feed"):
            return self._feed(feeds)

    def fetch(self, timeout: float | None = None) -> Any:
        """The next piece's outputs: one array if the plan has one output, else a dict."""
        with self._locked("fetch"):
            self._check_failed()
            if self.inputs:
                if not self._in_flight:
                    raise UsageError("fetch with no piece in flight: feed() one first")
                self._claim("fetch")
            out = {name: self._next_result(name, timeout) for name in self.outputs}
            self._in_flight -= 1 if self.inputs else 0
        if len(out) == 1:
            return next(iter(out.values()))
        return out

    def run(self, feeds: Mapping[str, Any], timeout: float | None = None) -> Any:
        """Run one piece through the plan and return its outputs (atomic across threads)."""
        with self._locked("run"):
            self._feed(feeds)
            return self.fetch(timeout)

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

    def start_sources(self, pieces: int | None = None) -> None:
        """Start every source actor for ``pieces`` (default: its own piece count) and
        close the inputs: the plan then drains by itself (``collect`` after it exited)."""
        self._check_open()
        sources = self.plan.tasks_by_type("source")
        if not sources:
            raise UsageError(f"run_to_end needs a plan with source tasks; plan "
                             f"'{self.plan.job.name}' has none: feed its inputs with "
                             "run(feeds) or run_many(feeds)")
        if self.inputs:  # its sources are gated: closing the inputs now ends them piece-less
            raise UsageError(
                f"run_to_end: plan '{self.plan.job.name}' has inputs {sorted(self.inputs)}, "
                "which pace its sources (one piece of each per piece fed), so it runs only as "
                "far as they are fed: call run(feeds) or run_many(feeds) for its pieces; "
                "close() (the end of the with block) ends it")
        for t in sources:
            if t.attrs.get("gated"):  # paced by the inputs (a job with both): no count
                continue
            n = pieces if pieces is not None else t.attrs.get("piece_num",
                                                              self.plan.job.num_pieces)
            if n is None:
                raise UsageError(f"source task {t.task_id} ({t.label}) has no piece count; "
                                 "pass pieces=")
            self.runtime.command(t.task_id, "start", int(n))
        self.close_inputs()

    def collect(self) -> dict[str, list[Any]]:
        """Every output piece delivered so far, by output name (after the run ended)."""
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
        return results

    # -- the runtime's side ------------------------------------------------------------
    def on_deliver(self, task: Task | None, piece_id: int, arrays: dict) -> None:
        """An output piece; ``task=None``: the run failed (wakes every waiting fetch)."""
        if task is None:
            for q in self._results.values():
                q.put(_WAKE)
            return
        name = self._by_task[task.task_id]
        value = next(iter(arrays.values())) if len(arrays) == 1 else arrays
        self._results[name].put((piece_id, value))

    def close_inputs(self) -> None:
        """No more pieces: the inputs end (EORD) and the sources stop."""
        if self._closed:
            return
        self._closed = True
        for t in self.inputs.values():
            self.runtime.command(t.task_id, "close")

    def stop_sources(self) -> None:
        """Sources end after the pieces they made; a gated one ends with its inputs (it may
        have exited already: a command would find no actor)."""
        for t in self.plan.tasks_by_type("source"):
            if not t.attrs.get("gated"):
                self.runtime.command(t.task_id, "stop")

    # -- internals ---------------------------------------------------------------------
    @contextlib.contextmanager
    def _locked(self, what: str) -> Iterator[None]:
        """The lock, waited for at most ``timeout`` (another thread's piece)."""
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
                "pieces, so there is nothing to feed; use run_to_end(pieces=N)")
        if not isinstance(feeds, Mapping):
            raise UsageError(f"feeds must be a mapping of input name -> array, got "
                             f"{type(feeds).__name__}")
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

    def _check_open(self) -> None:
        self._check_failed()
        if self._closed:
            raise SessionClosed("session is closed; open a new Session to run more pieces")

    def _check_failed(self) -> None:
        err = getattr(self.runtime, "error", None)
        if err is not None:
            raise err

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

    def _next_result(self, name: str, timeout: float | None = None) -> Any:
        q = self._results[name]
        want = self._received[name]
        limit = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                live = self.runtime.describe_live() if self.runtime is not None else "?"
                raise WaitTimeout(f"waited {limit:.1f}s for piece {want} of output '{name}'; "
                                  f"still running: {live}")
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
                raise InternalError(f"output '{name}' delivered piece {piece}, expected {want}")
            return value


__all__ = ["PieceClient"]
