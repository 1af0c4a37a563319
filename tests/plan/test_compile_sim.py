"""Compiled jobs run by ``flowlaunch sim`` (one process per machine, tcp between them).

The same job gives the same outputs on 3 machines as on 1; fixed random jobs from the
oracle match numpy through sim too (their job file's ``check`` hook makes sim fail if not).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import actorflow as af
from tests.plan.compile_oracle import build, reference

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def sim(target: Path, machines: int, out: Path, *extra: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "actorflow.launcher.cli", "sim", str(target), "--machines",
           str(machines), "--out", str(out), "--quiet", "--timeout", "60", *extra]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=90, cwd=ROOT)
    assert res.returncode == 0, f"{' '.join(cmd)} failed:\n{res.stdout}\n{res.stderr}"
    return res


def test_three_machines_equal_one_machine(tmp_path):
    one = sim(EXAMPLES / "mlp_data_parallel.py", 1, tmp_path / "one.npz")
    three = sim(EXAMPLES / "mlp_data_parallel.py", 3, tmp_path / "three.npz")
    assert "check: max |actorflow - numpy|" in one.stdout + three.stdout
    a, b = np.load(tmp_path / "one.npz"), np.load(tmp_path / "three.npz")
    assert a["y"].shape == (4, 16, 8)
    np.testing.assert_allclose(a["y"], b["y"], rtol=1e-6, atol=1e-7)
    plan3 = af.compile(_load("mlp_data_parallel").build_job(3), machines=3)
    assert {t.machine_id for t in plan3.tasks_by_type("normal")} == {0, 1, 2}


def _load(name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


FIXED = [
    {"machines": 2, "dpm": 2, "pieces": 2, "combine": "mul",
     "inputs": [{"shape": [6, 4], "seed": 1, "ranks": [0, 1, 2, 3], "sbp": "S0"},
                {"shape": [6, 4], "seed": 2, "ranks": [3, 1], "sbp": "S1"}],
     "steps": [["matmul", 5, 7, [2, 0], "S0"], ["unary", "tanh"], ["hint", [1, 2], "S1"],
               ["reduce", "sum", 0], ["softmax", 1]]},
    {"machines": 3, "dpm": 1, "pieces": 3, "combine": "add",
     "inputs": [{"shape": [5, 6], "seed": 3, "ranks": [2], "sbp": "B"}],
     "steps": [["var_binary", "add", True, 8, [0, 1, 2], "S0"], ["transpose"],
               ["matmul", 3, 9, [1, 2], "S0"], ["scalar", "rsub", 2], ["hint", [0], "B"]]},
]


@pytest.mark.parametrize("desc, options, unit", [
    (FIXED[0], {}, "thread"), (FIXED[1], {}, "thread"),
    (FIXED[1], {"unit_per_task": True}, "process"), (FIXED[0], {"fan_width": 2}, "thread"),
], ids=["2x2-devices", "3-machines", "3-machines-process-per-task", "2x2-trees-of-width-2"])
def test_fixed_oracle_jobs_through_sim(tmp_path, desc, options, unit):
    job_file = tmp_path / "oracle_job.py"
    job_file.write_text(
        "import json, sys\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "from tests.plan.compile_oracle import build, max_error\n"
        f"DESC = json.loads({json.dumps(desc)!r})\n"
        "DEVICES_PER_MACHINE = DESC['dpm']\n"
        f"COMPILE_OPTIONS = {options!r}\n"
        "def build_job(machines):\n"
        "    return build(DESC)\n"
        "def check(outputs):\n"
        "    return max_error(DESC, outputs)\n")
    out = tmp_path / "out.npz"
    res = sim(job_file, desc["machines"], out, "--unit", unit)
    assert "OK" in res.stdout
    got = np.load(out)["y"]
    assert got.shape[0] == desc["pieces"]
    for i in range(desc["pieces"]):
        np.testing.assert_allclose(got[i], reference(desc, i), rtol=1e-4, atol=1e-5)
    plan = af.compile(build(desc), machines=desc["machines"], devices_per_machine=desc["dpm"],
                      **options)
    with af.Session(plan) as s:
        local = s.run_to_end()["y"]
    np.testing.assert_allclose(np.stack(local), got, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name, machines", [("matmul_model_parallel", 2),
                                            ("pipeline_4_stages", 4)])
def test_examples_through_sim(tmp_path, name, machines):
    res = sim(EXAMPLES / f"{name}.py", machines, tmp_path / "o.npz")
    assert "OK" in res.stdout
    mod = _load(name)
    got = np.load(tmp_path / "o.npz")["y"]
    for i in range(len(got)):
        np.testing.assert_allclose(got[i], mod.expected(i), rtol=1e-4, atol=1e-5)
