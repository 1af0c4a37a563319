"""The compiler examples run as scripts (in this process) and compile for other cluster sizes."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import actorflow as af

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("name", ["mlp_data_parallel", "matmul_model_parallel",
                                  "pipeline_4_stages"])
def test_example_main_checks_against_numpy(name, capsys):
    assert load(name).main() == 0
    assert "max |actorflow - numpy|" in capsys.readouterr().out


def test_examples_use_the_parallelism_they_claim():
    mlp = af.compile(load("mlp_data_parallel").build_job(2), machines=2)
    assert mlp.ctrl["sbp"]["matmul0"] == "(a:S0, b:B) -> S0 on [m0:d0, m1:d0]"
    assert mlp.ctrl["sbp"]["w1"] == "B on [m0:d0, m1:d0]"
    mm = af.compile(load("matmul_model_parallel").build_job(2), machines=2)
    assert mm.ctrl["sbp"]["w"] == "S0 on [m0:d0, m1:d0]"
    assert mm.ctrl["sbp"]["matmul0"].startswith("(a:S1, b:S0) -> P")
    pipe = af.compile(load("pipeline_4_stages").build_job(4), machines=4)
    stages = [t.machine_id for t in pipe.tasks if any(e.kernel.op_type == "matmul"
                                                      for e in t.exec_sequence)]
    assert sorted(stages) == [0, 1, 2, 3]
    assert all(d.register_num == 2 for d in pipe.regst_descs().values() if d.consumer_task_ids)


@pytest.mark.parametrize("machines", [1, 3])
def test_examples_compile_for_other_cluster_sizes(machines):
    for name in ("mlp_data_parallel", "matmul_model_parallel", "pipeline_4_stages"):
        plan = af.compile(load(name).build_job(machines), machines=machines)
        assert plan.machines.count == machines
