"""The sample job runs in-process and matches numpy."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

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


def load_bench(name: str):
    path = EXAMPLES.parent / "bench" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"bench_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_foundation_benches_run_tiny_and_print_their_tables(capsys):
    """Smoke only (no timing asserted): the benches still build, run and print tables."""
    assert load_bench("actor_overhead").main(["--pieces", "50", "--repeats", "1",
                                              "--chain", "2"]) == 0
    assert load_bench("pipeline").main(["--ms", "1", "--pieces", "4", "--repeats", "1",
                                        "--stages", "2"]) == 0
    out = capsys.readouterr().out
    assert "| actors | threads | register_num |" in out
    assert "| stages | register_num | pieces | ideal s |" in out
    assert out.count("\n|") >= 2 + 4 + 2 + 4  # header+rule and one row per config


def test_eager_basics_example_matches_numpy_and_shows_the_error(capsys):
    from actorflow import eager

    try:
        assert load("eager_basics").main() == 0
    finally:
        assert eager.shutdown() == []  # the example's VM threads end with the test
    out = capsys.readouterr().out
    assert "max |eager - numpy| = 0.00e+00" in out
    assert "caught at the wait: eager op 'scalar_pow' issued at" in out
    assert "eager_basics.py:37" in out


def test_eager_bench_runs_tiny_and_prints_its_tables(capsys):
    """Smoke only (no timing asserted): the eager bench runs and its results check out."""
    from actorflow.eager.core import NATIVE

    assert load_bench("eager").main(["--ops", "200", "--roundtrips", "20", "--matmuls", "3",
                                     "--forwards", "3", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    rows = [ln for ln in out.splitlines() if ln.lstrip("| ").startswith("actorflow ")]
    assert len(rows) == (14 if NATIVE is not None else 7)  # 4 tables, both cores
    checked = [ln for ln in rows if "bit-identical" in ln]
    assert len(checked) == (6 if NATIVE is not None else 3)  # overlap and MLP rows
    assert not any("max |diff|" in ln for ln in rows)


@pytest.mark.timeout(90)
def test_global_tensors_example_runs_on_four_ranks(flowlaunch):
    example = EXAMPLES / "global_tensors.py"
    r = flowlaunch.run("--nproc-per-node", "4", "--master-port", "0", str(example),
                       timeout=80)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.count("global tensors match numpy") == 4, r.stdout
