"""Load what to run from a path: a saved ``.plan``/``.json`` plan, or a Python job file.

A Python job file defines ``build_plan(machines: int) -> Plan`` (a hand-built plan); the
compiler issue adds jobs traced with ``actorflow.functional``.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
from pathlib import Path
from types import ModuleType

from actorflow.errors import LaunchError, PlanLoadError
from actorflow.plan.io import load_plan
from actorflow.plan.model import Plan


def load_module(path: Path) -> ModuleType:
    name = f"_actorflow_job_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise LaunchError(f"{path}: cannot import as a Python job file")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except Exception as e:
        raise LaunchError(f"{path}: importing the job file failed: {type(e).__name__}: {e}") from e
    return mod


def load_target(path: str | Path, machines: int = 1) -> Plan:
    """The plan to run for ``path`` on ``machines`` machines, validated."""
    path = Path(path)
    if not path.exists():
        raise PlanLoadError(f"{path}: no such file")
    if path.suffix == ".py":
        mod = load_module(path)
        fn = getattr(mod, "build_plan", None)
        if fn is None:
            raise LaunchError(f"{path}: a job file must define build_plan(machines)")
        kwargs = {"machines": machines} if "machines" in inspect.signature(fn).parameters else {}
        plan = fn(**kwargs)
        if not isinstance(plan, Plan):
            raise LaunchError(f"{path}: build_plan returned {type(plan).__name__}, not a Plan")
        plan.validate()
        return plan
    return load_plan(path)
