"""``import actorflow`` is cheap: the frontend, compiler and Session load on first use.

Every ``flowlaunch`` worker process imports the package; a worker needs the control
plane, plan files and the actor runtime, never the frontend or the compiler.  Each check
runs in a fresh interpreter so this test's own imports do not hide a regression.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ["actorflow.frontend", "actorflow.frontend.job", "actorflow.frontend.functional",
         "actorflow.plan.compiler", "actorflow.session", "actorflow.actors.cluster",
         "actorflow.spmd", "actorflow.collective", "actorflow.eager", "actorflow.frontend.creation"]


def loaded_after(code: str) -> set[str]:
    """Modules in ``sys.modules`` after running ``code`` in a fresh interpreter."""
    probe = code + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    return set(json.loads(r.stdout.splitlines()[-1]))


def test_import_actorflow_loads_nothing_heavy() -> None:
    mods = loaded_after("import actorflow")
    assert not mods & {*HEAVY, "numpy", "zmq"}, sorted(mods & {*HEAVY, "numpy", "zmq"})
    assert "actorflow.errors" in mods  # errors stay eager: cheap and always needed


@pytest.mark.parametrize("code", [
    "import actorflow.launcher.worker",
    "from actorflow.launcher.cli import build_parser; build_parser('worker')",
])
def test_worker_imports_skip_frontend_and_compiler(code: str) -> None:
    mods = loaded_after(code)
    assert "actorflow.launcher.worker" in mods
    assert not mods & set(HEAVY), sorted(mods & set(HEAVY))


def test_public_names_load_on_first_use() -> None:
    mods = loaded_after(
        "import importlib, actorflow as af\n"
        "s, j, F, p = map(importlib.import_module, ['actorflow.session',\n"
        "    'actorflow.frontend.job', 'actorflow.functional', 'actorflow.plan'])\n"
        "assert af.Session is s.Session and af.ClusterSession is s.ClusterSession\n"
        "assert af.compile is j.compile and af.job is j.job and af.Job is j.Job\n"
        "assert af.functional is F and af.PlanBuilder is p.PlanBuilder and af.Plan is p.Plan\n"
        "assert af.load_plan is p.load_plan and af.save_plan is p.save_plan\n"
        "from actorflow import sbp, placement, read_variable, variable, random_input\n"
        "assert set(af.__all__) <= set(dir(af))\n"
        "assert af.tensor([1, 2]).numpy().tolist() == [1, 2] and callable(af.trace)\n"
        "import actorflow.trace as t\n"
        "assert af.trace is t\n"
        "assert all(getattr(af, n) is not None for n in af.__all__)\n")
    assert {"actorflow.frontend.job", "actorflow.session"} <= mods


def test_unknown_attribute_is_an_attribute_error() -> None:
    import actorflow

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        actorflow.nope  # noqa: B018
    assert not hasattr(actorflow, "nope")


def test_every_public_name_has_a_lazy_source() -> None:
    import actorflow

    assert set(actorflow.__all__) == {*actorflow._LAZY, "__version__", "errors", "trace"}
