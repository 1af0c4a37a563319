"""The sample job runs in-process and matches numpy."""

from __future__ import annotations

import importlib.util
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_sample_pipeline_main_returns_0(capsys):
    assert load("sample_pipeline").main() == 0
    assert "max |actorflow - numpy|" in capsys.readouterr().out


def test_sample_pipeline_on_several_machines_matches_numpy():
    import actorflow as af

    mod = load("sample_pipeline")
    plan = mod.build_plan(machines=3, pieces=5, register_num=1)
    assert {t.machine_id for t in plan.tasks} == {0, 1, 2}
    with af.Session(plan) as s:
        out = s.run_to_end()["colsum"]
    assert len(out) == 5 and mod.check(out) < 1e-5
