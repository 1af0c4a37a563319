"""JobClient: run the jobs of a multi-job plan by name over any runtime, from many threads.

    client = JobClient(plan, timeout=60)
    client.attach(runtime)                  # MachineRuntime, NodeGroup: push_feed, command
    client.run("update", {"x": x})          # one piece of job 'update'
    y = client.run("eval")                  # reads the variable update just changed
    fut = client.submit("eval")             # a concurrent.futures.Future
    client.save("ckpt/"); client.load("ckpt/")

A request pushes the job's feeds to its input actors and the job's critical-section id to
the main job's ``wait_and_send_ids`` actor; the reentrant lock, not the caller, keeps
conflicting jobs apart.  The request's future completes when every output of that piece
arrived and every machine's callback tick reported the piece done (``on_deliver``).
``af.Session`` holds one for a multi-job plan (``actors.piece_client.PieceClient`` is the
counterpart for a plan of one job); ``flowlaunch sim`` drives one over machines talking
through sockets.
"""

from __future__ import annotations

import copy
import os
import threading
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from actorflow.errors import JobRunError, SessionClosed, UsageError, WaitTimeout
from actorflow.kernels.checkpoint import encode_path, read_manifest, write_manifest
from actorflow.plan.compiler.modelio import LOAD_JOB, PATH_INPUT, SAVE_JOB
from actorflow.plan.compiler.pushpull import PUSH, is_push_pull
from actorflow.plan.model import JobInfo, Plan, Task


@dataclass
class _Request:
    job: JobInfo
    piece: int
    future: Future
    outputs: dict[str, Any] = field(default_factory=dict)
    machines_done: int = 0


class JobClient:
    """Requests by job name on a multi-job plan; thread-safe."""

    def __init__(self, plan: Plan, timeout: float = 60.0) -> None:
        if not plan.is_multi_job:
            raise UsageError("running jobs by name needs a multi-job plan "
                             "(af.compile([job, ...]))")
        self.plan = plan
        self.timeout = timeout
        self.runtime: Any = None
        # the jobs a caller names; each request of one also runs its push jobs (one per
        # input, carrying the feeds) and pull jobs (one per output, bringing the results)
        self._named: dict[str, JobInfo] = {j.name: j for j in plan.jobs[:-1]
                                           if not is_push_pull(j.name)}
        self._by_id = {j.job_id: j for j in plan.jobs}
        self._pushes: dict[str, list[JobInfo]] = {}
        self._pulls: dict[str, list[JobInfo]] = {}
        for j in plan.jobs:
            if is_push_pull(j.name):
                owner = j.name.split(":", 1)[1].rsplit("/", 1)[0]
                (self._pushes if j.name.startswith(PUSH) else self._pulls).setdefault(
                    owner, []).append(j)
        self._task_job = {t.task_id: t.job_id for t in plan.tasks}
        self._labels = {t.task_id: t.label for t in plan.tasks}
        self._inputs: dict[int, dict[str, Task]] = {}
        self._outputs: dict[int, list[str]] = {}
        for t in plan.tasks:
            if t.task_type == "input":
                self._inputs.setdefault(t.job_id, {})[t.attrs["input_name"]] = t
            elif t.task_type == "output":
                self._outputs.setdefault(t.job_id, []).append(t.attrs["output_name"])
        waits = plan.tasks_by_type("wait_and_send_ids")
        if len(waits) != 1:
            raise UsageError(f"a multi-job plan has one wait_and_send_ids task, this one "
                             f"{len(waits)}")
        self._wait = waits[0]
        self._machines = plan.machines.count
        self._pending: dict[tuple[int, int], _Request] = {}
        self._next_piece = {j.job_id: 0 for j in plan.jobs}
        self._submit_lock = threading.Lock()
        self._lock = threading.Lock()
        self._closed = False

    @property
    def jobs(self) -> list[str]:
        """The names a request takes (sorted; ``__save__``/``__load__`` among them)."""
        return sorted(self._named)

    def attach(self, runtime: Any) -> None:
        """The runtime requests go to (``push_feed``, ``command``, ``error``)."""
        self.runtime = runtime

    # -- requests ----------------------------------------------------------------------
    def submit(self, job: str, feeds: Mapping[str, Any] | None = None) -> Future:
        """Start one piece of ``job``; the future's result is its outputs (a dict by name).

        The request is the job's push jobs (the feeds), the job, and its pull jobs (the
        outputs), sent in that order; the future completes when all of them did."""
        self._check_open()
        info = self._job(job)
        arrays = self._convert_feeds(info, feeds or {})
        pushes, pulls = self._pushes.get(info.name, []), self._pulls.get(info.name, [])
        with self._submit_lock:  # the k-th request of a job is piece k of all its parts
            parts = [self._start(p, {p.inputs[0]: arrays[p.inputs[0]]}) for p in pushes]
            parts.append(self._start(info, {} if pushes else arrays))
            parts += [self._start(p, {}) for p in pulls]
            # one command per id, in order: pushes, the job, pulls (FIFO to one task)
            for job_id in [p.job_id for p in pushes] + [info.job_id] + [p.job_id for p in pulls]:
                self.runtime.command(self._wait.task_id, "send", job_id)
        if self.runtime.error is not None:
            self.fail_all(self.runtime.error)
        return _gather(parts, main=len(pushes))

    def _start(self, info: JobInfo, arrays: dict[str, dict]) -> Future:
        """One piece of one job: its request and feeds; the caller sends the id (and holds
        ``_submit_lock``)."""
        piece = self._next_piece[info.job_id]
        self._next_piece[info.job_id] += 1
        req = _Request(info, piece, Future())
        with self._lock:
            self._pending[(info.job_id, piece)] = req
        inputs = self._inputs.get(info.job_id, {})
        for name, blobs in arrays.items():
            self.runtime.push_feed(inputs[name].task_id, blobs)
        return req.future

    def run(self, job: str | None, feeds: Mapping[str, Any] | None = None,
            timeout: float | None = None) -> Any:
        """One piece of ``job`` (None: the plan's only job besides save/load): its output
        (one array), its outputs (a dict), or None."""
        job = self._only_job() if job is None else job
        return _unwrap(self.result(self.submit(job, feeds), job, timeout))

    def run_many(self, job: str | None, feeds: Iterable[Mapping[str, Any]],
                 window: int = 8) -> Iterator[Any]:
        """Many pieces of ``job`` (None: the only one) with up to ``window`` in flight;
        outputs in order."""
        job = self._only_job() if job is None else job
        in_flight: list[Future] = []
        for f in feeds:
            in_flight.append(self.submit(job, f))
            if len(in_flight) >= window:
                yield _unwrap(self.result(in_flight.pop(0), job, None))
        for fut in in_flight:
            yield _unwrap(self.result(fut, job, None))

    def pieces(self, job: str) -> int:
        """How many pieces of ``job`` were requested so far."""
        return self._next_piece[self._job(job).job_id]

    def result(self, fut: Future, job: str, timeout: float | None) -> dict[str, Any]:
        """Wait for one request; the timeout error names the job and what still runs."""
        timeout = self.timeout if timeout is None else timeout
        try:
            return fut.result(timeout)
        except FutureTimeout:
            live = self.runtime.describe_live() if self.runtime is not None else "?"
            raise WaitTimeout(f"waited {timeout:.1f}s for a piece of job '{job}'; still "
                              f"running: {live}") from None

    # -- checkpoints -------------------------------------------------------------------
    def save(self, directory: str | os.PathLike) -> str:
        """Every device writes its part of every variable under ``directory`` (the
        ``__save__`` job); the manifest is written once every part is on disk."""
        self._job(SAVE_JOB, "the plan has no variables to save")
        root = Path(directory).resolve()
        path = encode_path(root)  # a path too long is refused before anything is written
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UsageError(f"checkpoint directory {directory}: cannot create it: "
                             f"{e.strerror or e}") from e
        self.result(self.submit(SAVE_JOB, {PATH_INPUT: path}), SAVE_JOB, None)
        return str(write_manifest(root, self._manifest()))

    def load(self, directory: str | os.PathLike) -> None:
        """Every device reads its region of every variable from a checkpoint saved on any
        number of machines (the ``__load__`` job)."""
        info = self._job(LOAD_JOB, "the plan has no variables to load")
        root = Path(directory).resolve()
        saved = read_manifest(root)["variables"]
        mine = self._manifest()
        missing = sorted(set(info.writes) - set(saved))
        if missing:
            raise UsageError(f"{directory}: checkpoint lacks variables {missing} of the plan")
        for name in info.writes:
            a, b = saved[name], mine[name]
            if (tuple(a["shape"]), a["dtype"]) != (tuple(b["shape"]), b["dtype"]):
                raise UsageError(f"{directory}: variable '{name}' is {tuple(a['shape'])} "
                                 f"{a['dtype']} there, {tuple(b['shape'])} {b['dtype']} in "
                                 "the plan")
        self.result(self.submit(LOAD_JOB, {PATH_INPUT: encode_path(root)}), LOAD_JOB, None)

    def _manifest(self) -> dict[str, dict[str, Any]]:
        """Names, logical shapes, dtypes, SBPs, placements and part files: laid out by the
        compiler (``plan.ctrl["checkpoint"]``), so rank 0 knows every machine's parts."""
        layout = self.plan.ctrl.get("checkpoint")
        if not layout:
            raise UsageError("the plan has no checkpoint layout (compiled without model_io)")
        return copy.deepcopy(layout)

    # -- the runtime's side ------------------------------------------------------------
    def on_deliver(self, task: Task | None, piece_id: int, arrays: dict) -> None:
        """Outputs and callback ticks of every machine; ``task=None``: the run failed."""
        if task is None:
            err = getattr(self.runtime, "error", None)
            if err is not None:
                self.fail_all(err)
            return
        callback = task.task_type == "callback_tick"
        job_id = int(task.attrs["critical_section"]) if callback else task.job_id
        with self._lock:
            req = self._pending.get((job_id, piece_id))
            if req is None:
                return
            if callback:
                req.machines_done += 1
            else:
                req.outputs[task.attrs["output_name"]] = next(iter(arrays.values()))
            done = (req.machines_done == self._machines
                    and len(req.outputs) == len(self._outputs.get(job_id, [])))
            if done:
                del self._pending[(job_id, piece_id)]
        if done:
            req.future.set_result(req.outputs)

    def close_ids(self) -> None:
        """No more requests: the main job drains (ids end, the lock ends after the last
        return, and EORD flows through case, every job and esac back to the lock)."""
        self._closed = True
        self.runtime.command(self._wait.task_id, "close")

    def fail_all(self, error: BaseException | None = None) -> None:
        """Fail every waiting request (the run failed or the session closed)."""
        error = error if error is not None else SessionClosed("session closed")
        with self._lock:
            reqs = list(self._pending.values())
            self._pending.clear()
        for req in reqs:
            if not req.future.done():
                req.future.set_exception(self._job_error(error, req))

    # -- internals ---------------------------------------------------------------------
    def _check_open(self) -> None:
        err = getattr(self.runtime, "error", None)
        if err is not None:
            self.fail_all(err)
            raise err
        if self._closed:
            raise SessionClosed("no more requests: the session is closed")

    def _job(self, name: str, why: str = "") -> JobInfo:
        info = self._named.get(name) if isinstance(name, str) else None
        if info is None:
            raise UsageError(f"{why + ': ' if why else ''}the plan has no job {name!r}; its "
                             f"jobs: {self.jobs}")
        return info

    def _only_job(self) -> str:
        user = [n for n in self.jobs if n not in (SAVE_JOB, LOAD_JOB)]
        if len(user) != 1:
            raise UsageError(f"the plan has jobs {user}: name the one to run, "
                             "run(job, feeds)")
        return user[0]

    def _convert_feeds(self, info: JobInfo, feeds: Mapping[str, Any]) -> dict[str, dict]:
        pushes = self._pushes.get(info.name)  # none: compiled with push_pull=False
        inputs = ({name: t for p in pushes for name, t in self._inputs.get(p.job_id, {}).items()}
                  if pushes else self._inputs.get(info.job_id, {}))
        missing, extra = set(inputs) - set(feeds), set(feeds) - set(inputs)
        if missing or extra:
            raise UsageError(f"job '{info.name}': feeds must name exactly its inputs "
                             f"{sorted(inputs)}; missing {sorted(missing)}, unknown "
                             f"{sorted(extra)}")
        out = {}
        for name, value in feeds.items():
            b = next(iter(inputs[name].produced.values())).blobs["out"]
            arr = np.asarray(value.get("out") if isinstance(value, Mapping) else value)
            if arr.shape != tuple(b.shape):
                raise UsageError(f"job '{info.name}', input '{name}': expected shape "
                                 f"{tuple(b.shape)} {b.dtype}, got {arr.shape} {arr.dtype}")
            if not np.can_cast(arr.dtype, b.dtype, "same_kind"):
                raise UsageError(f"job '{info.name}', input '{name}': expected dtype {b.dtype}, "
                                 f"got {arr.dtype}")
            out[name] = {"out": np.array(arr, dtype=b.dtype, copy=True)}  # caller may reuse it
        return out

    def _job_error(self, error: BaseException, req: _Request) -> JobRunError:
        where = ""
        tid = getattr(error, "task_id", None)
        if tid in self._task_job:
            job = self._by_id[self._task_job[tid]].name
            piece = getattr(error, "piece_id", "?")
            where = f"job '{job}', task {tid} ({self._labels[tid]}), piece {piece} failed: "
        e = JobRunError(req.job.name, req.piece,
                        f"piece {req.piece} of job '{req.job.name}' did not finish: {where}"
                        f"{error}", tid)
        e.__cause__ = error
        return e


def _gather(parts: list[Future], main: int) -> Future:
    """One future for the parts of a request: their outputs merged, or an error (the job's
    own, ``parts[main]``, before its push and pull jobs')."""
    whole: Future = Future()
    left = [len(parts)]
    lock = threading.Lock()

    def done(_f: Future) -> None:
        with lock:
            left[0] -= 1
            if left[0]:
                return
        order = [parts[main], *parts[:main], *parts[main + 1:]]
        errors = [f.exception() for f in order if f.exception() is not None]
        if errors:
            whole.set_exception(errors[0])
            return
        merged: dict[str, Any] = {}
        for f in parts:
            merged.update(f.result())
        whole.set_result(merged)

    for f in parts:
        f.add_done_callback(done)
    return whole


def _unwrap(outputs: dict[str, Any]) -> Any:
    if not outputs:
        return None
    return next(iter(outputs.values())) if len(outputs) == 1 else outputs


__all__ = ["JobClient"]
