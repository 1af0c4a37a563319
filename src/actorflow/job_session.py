"""JobSession: drive the jobs of a multi-job plan by name, from any number of threads.

    plan = af.compile([update, evaluate], machines=2)
    with af.Session(plan) as s:              # a multi-job plan gives a JobSession
        s.run("update", {"x": x})            # one piece of job 'update'
        y = s.run("eval")                    # reads the variable update just changed
        ys = list(s.run_many("eval", ({} for _ in range(8))))
        fut = s.submit("eval")               # a concurrent.futures.Future
        s.save("ckpt/"); s.load("ckpt/")     # model-IO jobs, re-sharding on load

A request pushes the job's feeds to its input actors and the job's critical-section id to
the main job's ``wait_and_send_ids`` actor; the reentrant lock, not the caller, keeps
conflicting jobs apart.  The request's future completes when every output of that piece
arrived and every machine's callback tick reported the piece done.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from actorflow.errors import (
    JobRunError,
    SessionClosed,
    UsageError,
    WaitTimeout,
)
from actorflow.kernels.checkpoint import read_manifest, read_variable, write_checkpoint
from actorflow.plan.compiler.modelio import LOAD_JOB, SAVE_JOB
from actorflow.plan.model import JobInfo, Plan, Task
from actorflow.session import Session


@dataclass
class _Request:
    job: JobInfo
    piece: int
    future: Future
    outputs: dict[str, Any] = field(default_factory=dict)
    machines_done: int = 0


class JobSession(Session):
    """A Session over a multi-job plan: ``run(job, feeds)``, ``run_many``, ``submit``."""

    def __init__(self, plan: Plan, **kw: Any) -> None:
        if not plan.is_multi_job:
            raise UsageError("JobSession needs a multi-job plan (af.compile([job, ...]))")
        self.jobs: dict[str, JobInfo] = {j.name: j for j in plan.jobs[:-1]}
        self._by_id = {j.job_id: j for j in plan.jobs}
        self._job_inputs: dict[int, dict[str, Task]] = {}
        self._job_outputs: dict[int, list[str]] = {}
        for t in plan.tasks:
            if t.task_type == "input":
                self._job_inputs.setdefault(t.job_id, {})[t.attrs["input_name"]] = t
            elif t.task_type == "output":
                self._job_outputs.setdefault(t.job_id, []).append(t.attrs["output_name"])
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
        super().__init__(plan, **kw)

    # -- requests ----------------------------------------------------------------------
    def submit(self, job: str, feeds: Mapping[str, Any] | None = None) -> Future:
        """Start one piece of ``job``; the future's result is its outputs (a dict by name)."""
        self._check_open()
        info = self._job(job)
        arrays = self._convert_feeds(info, feeds or {})
        with self._submit_lock:  # the k-th request of a job is its piece k, everywhere
            piece = self._next_piece[info.job_id]
            self._next_piece[info.job_id] += 1
            req = _Request(info, piece, Future())
            with self._lock:
                self._pending[(info.job_id, piece)] = req
            inputs = self._job_inputs.get(info.job_id, {})
            for name, blobs in arrays.items():
                self.runtime.push_feed(inputs[name].task_id, blobs)
            self.runtime.command(self._wait.task_id, "send", info.job_id)
        if self.runtime.error is not None:
            self._fail_all(self.runtime.error)
        return req.future

    def run(self, job: Any, feeds: Mapping[str, Any] | None = None,  # type: ignore[override]
            timeout: float | None = None) -> Any:
        """One piece of ``job``: its output (one array), its outputs (a dict), or None."""
        if isinstance(job, Mapping) and feeds is None:  # run(feeds) on a one-job plan
            job, feeds = self._only_job(), job
        fut = self.submit(job, feeds)
        return self._unwrap(self._result(fut, job, timeout))

    def run_many(self, job: Any, feeds: Iterable[Mapping[str, Any]] | None = None,  # type: ignore[override]
                 window: int = 8) -> Iterator[Any]:
        """Many pieces of ``job`` with up to ``window`` in flight; outputs in order."""
        if feeds is None:
            job, feeds = self._only_job(), job
        in_flight: list[Future] = []
        for f in feeds:
            in_flight.append(self.submit(job, f))
            if len(in_flight) >= window:
                yield self._unwrap(self._result(in_flight.pop(0), job, None))
        for fut in in_flight:
            yield self._unwrap(self._result(fut, job, None))

    def feed(self, feeds: Mapping[str, Any]) -> int:
        raise UsageError("a multi-job plan runs jobs by name: use submit/run/run_many(job, ...)")

    def fetch(self) -> Any:
        raise UsageError("a multi-job plan runs jobs by name: use submit/run/run_many(job, ...)")

    def run_to_end(self, pieces: int | None = None) -> dict[str, list[Any]]:
        raise UsageError("a multi-job plan runs jobs by name: use run_many(job, ...)")

    # -- checkpoints -------------------------------------------------------------------
    def save(self, directory: str | os.PathLike) -> str:
        """Write every variable (each device part + a manifest) to ``directory``."""
        info = self._job(SAVE_JOB, "the plan has no variables to save")
        values = self._result(self.submit(SAVE_JOB), SAVE_JOB, None)
        sbp = self.plan.ctrl.get("sbp", {}).get(SAVE_JOB, {})
        variables = {}
        for name in info.reads:
            variables[name] = {"value": np.asarray(values[name]), "parts": self._parts(name),
                               "sbp": sbp.get(name, "")}
        return str(write_checkpoint(directory, variables))

    def load(self, directory: str | os.PathLike) -> None:
        """Set every variable from a checkpoint saved on any number of machines."""
        info = self._job(LOAD_JOB, "the plan has no variables to load")
        manifest = read_manifest(directory)
        missing = sorted(set(info.writes) - set(manifest["variables"]))
        if missing:
            raise UsageError(f"{directory}: checkpoint lacks variables {missing} of the plan")
        feeds = {}
        for name in info.writes:
            task = self._job_inputs[info.job_id][f"{name}.value"]
            blob = next(iter(task.produced.values())).blobs["out"]
            feeds[f"{name}.value"] = read_variable(directory, name, tuple(blob.shape),
                                                   blob.dtype)
        self._result(self.submit(LOAD_JOB, feeds), LOAD_JOB, None)

    def _parts(self, name: str) -> list[tuple[list[int], list[int]]]:
        return [(list(e.kernel.attrs["begin"]), list(e.kernel.attrs["end"]))
                for t in self.plan.tasks if self._by_id[t.job_id].name == SAVE_JOB
                for e in t.exec_sequence if e.kernel.op_type == "variable_part"
                and e.kernel.op_name.startswith(f"{name}@")]

    # -- internals ---------------------------------------------------------------------
    def _job(self, name: str, why: str = "") -> JobInfo:
        info = self.jobs.get(name) if isinstance(name, str) else None
        if info is None:
            raise UsageError(f"{why + ': ' if why else ''}the plan has no job {name!r}; its "
                             f"jobs: {sorted(self.jobs)}")
        return info

    def _only_job(self) -> str:
        user = [n for n in self.jobs if n not in (SAVE_JOB, LOAD_JOB)]
        if len(user) != 1:
            raise UsageError(f"the plan has jobs {user}: name the one to run, "
                             "run(job, feeds)")
        return user[0]

    def _unwrap(self, outputs: dict[str, Any]) -> Any:
        if not outputs:
            return None
        return next(iter(outputs.values())) if len(outputs) == 1 else outputs

    def _result(self, fut: Future, job: str, timeout: float | None) -> dict[str, Any]:
        timeout = self.timeout if timeout is None else timeout
        try:
            return fut.result(timeout)
        except FutureTimeout:
            piece = getattr(fut, "piece", "?")
            raise WaitTimeout(f"waited {timeout:.1f}s for piece {piece} of job '{job}'; still "
                              f"running: {self.runtime.describe_live()}") from None

    def _convert_feeds(self, info: JobInfo, feeds: Mapping[str, Any]) -> dict[str, dict]:
        inputs = self._job_inputs.get(info.job_id, {})
        missing, extra = set(inputs) - set(feeds), set(feeds) - set(inputs)
        if missing or extra:
            raise UsageError(f"job '{info.name}': feeds must name exactly its inputs "
                             f"{sorted(inputs)}; missing {sorted(missing)}, unknown "
                             f"{sorted(extra)}")
        out = {}
        for name, value in feeds.items():
            desc = next(iter(inputs[name].produced.values()))
            b = desc.blobs["out"]
            arr = np.asarray(value.get("out") if isinstance(value, Mapping) else value)
            if arr.shape != tuple(b.shape):
                raise UsageError(f"job '{info.name}', input '{name}': expected shape "
                                 f"{tuple(b.shape)} {b.dtype}, got {arr.shape} {arr.dtype}")
            if not np.can_cast(arr.dtype, b.dtype, "same_kind"):
                raise UsageError(f"job '{info.name}', input '{name}': expected dtype {b.dtype}, "
                                 f"got {arr.dtype}")
            out[name] = {"out": np.array(arr, dtype=b.dtype, copy=True)}
        return out

    def _on_deliver(self, task: Task | None, piece_id: int, arrays: dict) -> None:
        if task is None:  # the run failed: fail every caller still waiting
            if self.runtime.error is not None:
                self._fail_all(self.runtime.error)
            return
        if task.task_type == "callback_tick":
            job_id = int(task.attrs["critical_section"])
        else:
            job_id = task.job_id
        with self._lock:
            req = self._pending.get((job_id, piece_id))
            if req is None:
                return
            if task.task_type == "callback_tick":
                req.machines_done += 1
            else:
                req.outputs[task.attrs["output_name"]] = next(iter(arrays.values()))
            done = (req.machines_done == self._machines
                    and len(req.outputs) == len(self._job_outputs.get(job_id, [])))
            if done:
                del self._pending[(job_id, piece_id)]
        if done:
            req.future.set_result(req.outputs)

    def _fail_all(self, error: BaseException) -> None:
        with self._lock:
            reqs = list(self._pending.values())
            self._pending.clear()
        for req in reqs:
            if not req.future.done():
                req.future.set_exception(self._job_error(error, req))

    def _job_error(self, error: BaseException, req: _Request) -> JobRunError:
        where = ""
        tid = getattr(error, "task_id", None)
        if tid is not None:
            t = next((t for t in self.plan.tasks if t.task_id == tid), None)
            if t is not None:
                job = self._by_id[t.job_id].name
                piece = getattr(error, "piece_id", "?")
                where = f"job '{job}', task {tid} ({t.label}), piece {piece} failed: "
        e = JobRunError(req.job.name, req.piece,
                        f"piece {req.piece} of job '{req.job.name}' did not finish: {where}"
                        f"{error}", tid)
        e.__cause__ = error
        return e

    def _close_inputs(self) -> None:
        # the main job drains everything: ids end, the lock ends after the last return, and
        # EORD flows through case, the identity ticks, every job and esac back to the lock
        self.runtime.command(self._wait.task_id, "close")

    def _check_failed(self) -> None:
        if self.runtime.error is not None:
            self._fail_all(self.runtime.error)
            raise self.runtime.error

    def close(self) -> None:
        try:
            super().close()
        finally:
            err = self.runtime.error
            self._fail_all(err if err is not None else SessionClosed("session closed"))


__all__ = ["JobSession"]
