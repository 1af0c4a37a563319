"""Load what to run from a path: a saved ``.plan``/``.json`` plan, or a Python job file.

A Python job file defines ``build_plan(machines: int) -> Plan`` (a hand-built plan), or a
job traced with ``actorflow.functional``: ``build_job(machines) -> af.Job`` or a module-level
``job``, compiled here for the machine count; or several jobs, ``build_jobs(machines) ->
[af.Job, ...]`` with ``drive(session)`` saying which jobs run in what order.
``--devices-per-machine`` and ``--device`` reach a builder that takes
``devices_per_machine`` / ``device`` parameters (the examples do), and set the devices per
machine of the compile.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from actorflow.errors import ActorflowError, LaunchError, PlanLoadError
from actorflow.plan.io import load_plan
from actorflow.plan.model import Plan


def load_module(path: Path) -> ModuleType:
    name = f"_actorflow_job_{abs(hash(str(path.resolve())))}"
    if name in sys.modules:  # load once: build_plan and check() share one module
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise LaunchError(f"{path}: cannot import as a Python job file")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except Exception as e:
        sys.modules.pop(name, None)
        raise LaunchError(f"{path}: importing the job file failed: {type(e).__name__}: {e}") from e
    return mod


JOB_NAMES = ("build_plan", "build_job", "build_jobs", "job")


def is_spmd_script(path: str | Path) -> bool:
    """A ``.py`` file that defines none of ``JOB_NAMES`` at top level: a script every rank
    runs (SPMD), not a job file.  Read from its syntax tree, so nothing is executed."""
    path = Path(path)
    if path.suffix != ".py" or not path.is_file():
        return False
    try:
        tree = ast.parse(path.read_text(), str(path))
    except (SyntaxError, UnicodeDecodeError, OSError):
        return False  # the job-file loader reports it with the file name
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in JOB_NAMES:
            return False
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else [])
        if any(isinstance(t, ast.Name) and t.id in JOB_NAMES for t in targets):
            return False
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                (a.asname or a.name) in JOB_NAMES for a in node.names):
            return False
    return True


DPM_ENV = "ACTORFLOW_DEVICES_PER_MACHINE"
JOB_DEVICE_ENV = "ACTORFLOW_JOB_DEVICE"


def job_options_from_env() -> dict[str, Any]:
    """``--devices-per-machine`` / ``--device`` as the launcher hands them to rank 0."""
    out: dict[str, Any] = {}
    if os.environ.get(DPM_ENV):
        try:
            out["devices_per_machine"] = int(os.environ[DPM_ENV])
        except ValueError as e:
            raise LaunchError(f"{DPM_ENV}={os.environ[DPM_ENV]!r} is not an integer") from e
    if os.environ.get(JOB_DEVICE_ENV):
        out["device"] = os.environ[JOB_DEVICE_ENV]
    return out


def load_target(path: str | Path, machines: int = 1, devices_per_machine: int | None = None,
                device: str | None = None) -> Plan:
    """The plan to run for ``path`` on ``machines`` machines, validated.  ``device`` and
    ``devices_per_machine`` go to a job file's builder when it takes them."""
    path = Path(path)
    if not path.exists():
        raise PlanLoadError(f"{path}: no such file")
    if path.suffix == ".py":
        mod = load_module(path)
        if callable(getattr(mod, "build_jobs", None)):
            return _compile_jobs_file(mod, path, machines)
        fn = getattr(mod, "build_plan", None)
        if fn is None:
            return _compile_job_file(mod, path, machines, devices_per_machine, device)
        plan = _call_builder(fn, "build_plan", path, machines, devices_per_machine, device)
        if not isinstance(plan, Plan):
            raise LaunchError(f"{path}: build_plan returned {type(plan).__name__}, not a Plan")
        plan.validate()
        return plan
    return load_plan(path)


def _call_builder(fn: Any, name: str, path: Path, machines: int,
                  devices_per_machine: int | None = None, device: str | None = None) -> Any:
    """Call a job file's ``build_plan``/``build_job`` with the options it takes; its own
    errors name the file."""
    params = inspect.signature(fn).parameters
    given = {"machines": machines, "devices_per_machine": devices_per_machine, "device": device}
    kwargs = {k: v for k, v in given.items() if v is not None and k in params}
    if device is not None and "device" not in params:
        raise LaunchError(f"{path}: --device {device}: {name}() takes no 'device' parameter; "
                          "the job file fixes its own placements")
    try:
        return fn(**kwargs)
    except ActorflowError:
        raise
    except Exception as e:
        raise LaunchError(f"{path}: {name}(machines={machines}) failed: "
                          f"{type(e).__name__}: {e}") from e


def _compile_job_file(mod: ModuleType, path: Path, machines: int,
                      devices_per_machine: int | None = None, device: str | None = None
                      ) -> Plan:
    """A job file with ``build_job(machines)`` or a module-level ``job``: compile it.

    ``DEVICES_PER_MACHINE`` in the file sets the devices per machine (default 1) and
    ``COMPILE_OPTIONS`` extra ``af.compile`` keywords (``merge``, ``unit_per_task``,
    ``fan_width``).
    A job is anything carrying a ``JobSpec`` (``plan.compiler.TracedJob``), so the launcher
    compiles through ``plan`` and never imports the frontend that traced it.
    """
    from actorflow.plan.compiler import JobSpec, TracedJob, compile_traced

    job = getattr(mod, "job", None)
    fn = getattr(mod, "build_job", None)
    if callable(fn):
        job = _call_builder(fn, "build_job", path, machines, devices_per_machine, device)
    if not (isinstance(job, JobSpec)
            or (isinstance(job, TracedJob) and isinstance(job.spec, JobSpec))):
        raise LaunchError(f"{path}: a job file must define build_plan(machines), "
                          "build_job(machines) returning an af.Job, or a module-level af.Job "
                          "named 'job'")
    options = dict(getattr(mod, "COMPILE_OPTIONS", {}))  # e.g. {"unit_per_task": True}
    dpm = devices_per_machine or int(getattr(mod, "DEVICES_PER_MACHINE", 1))
    return compile_traced(job, machines, dpm, **options)


def _compile_jobs_file(mod: ModuleType, path: Path, machines: int) -> Plan:
    """A multi-job file: ``build_jobs(machines)`` returns af.Jobs, compiled into one plan."""
    from actorflow.plan.compiler import JobSpec, TracedJob
    from actorflow.plan.compiler.multi import compile_jobs

    jobs = _call_builder(mod.build_jobs, "build_jobs", path, machines)
    specs: list[JobSpec] = [j.spec for j in (jobs if isinstance(jobs, (list, tuple)) else [])
                            if isinstance(j, TracedJob) and isinstance(j.spec, JobSpec)]
    if not specs or len(specs) != len(jobs):
        raise LaunchError(f"{path}: build_jobs(machines) must return a list of af.Job, got "
                          f"{type(jobs).__name__}")
    options = dict(getattr(mod, "COMPILE_OPTIONS", {}))
    return compile_jobs(specs, machines, int(getattr(mod, "DEVICES_PER_MACHINE", 1)),
                        **options)


def jobs_driver(path: str | Path) -> Callable[[Any], Any] | None:
    """A multi-job file's ``drive(session)`` (None unless it defines build_jobs and drive)."""
    path = Path(path)
    if path.suffix != ".py" or not path.exists():
        return None
    mod = load_module(path)
    if not callable(getattr(mod, "build_jobs", None)):
        return None
    fn = getattr(mod, "drive", None)
    if not callable(fn):
        raise LaunchError(f"{path}: a file with build_jobs(machines) needs drive(session), "
                          "naming which jobs run in what order")
    return fn


def runnable_check(plan: Plan, source: str | Path) -> None:
    """Reject, in one line, a plan flowlaunch cannot drive: it needs sources, not inputs
    (or, for a multi-job plan, the job file's ``drive(session)``, run by rank 0)."""
    if plan.is_multi_job:
        if jobs_driver(source) is None:
            raise LaunchError(f"{source}: a multi-job plan is driven by a job file's "
                              "drive(session); give the Python file with build_jobs and drive")
        return
    inputs = sorted(plan.input_tasks())
    if inputs:
        raise LaunchError(
            f"{source}: the plan has input tasks {inputs} fed by a client; flowlaunch runs "
            "source-driven plans (feed inputs from Python with actorflow.Session)")
    if not plan.tasks_by_type("source"):
        raise LaunchError(f"{source}: the plan has no source task, so nothing would run")


DEFAULT_CHECK_TOLERANCE = 1e-4


def job_check(path: str | Path) -> tuple[Callable[[Any], Any], float] | None:
    """The job file's optional ``check(outputs)`` hook and the largest number it may return
    and pass (``CHECK_TOLERANCE`` in the file, else 1e-4): a check whose number is not an
    elementwise error (a training run's loss gap, which a BLAS's last bits can move) says
    its own bound.  None for .plan files or no hook."""
    path = Path(path)
    if path.suffix != ".py":
        return None
    module = load_module(path)
    fn = getattr(module, "check", None)
    if not callable(fn):
        return None
    tol = getattr(module, "CHECK_TOLERANCE", DEFAULT_CHECK_TOLERANCE)
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not 0 <= tol < math.inf:
        raise LaunchError(f"{path}: CHECK_TOLERANCE must be a finite number >= 0 (the "
                          f"largest value check() may return and pass), got {tol!r}")
    return fn, float(tol)
