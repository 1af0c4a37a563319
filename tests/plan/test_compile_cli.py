"""``flowlaunch plan show|dot|validate|save`` on job files and saved plans."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import actorflow as af
from actorflow.launcher.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def flow(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_show_lists_tasks_per_machine_thread_with_regsts_and_bytes(capsys):
    rc, out, _ = flow(capsys, "plan", "show", str(EXAMPLES / "mlp_data_parallel.py"),
                      "--machines", "2")
    assert rc == 0
    assert out.startswith("plan 'mlp_data_parallel': 8 tasks on 2 machines x 1 devices, 4 pieces")
    assert "machine 0" in out and "machine 1" in out
    assert re.search(r"thread 1 \(comm_net, \d+ tasks\)", out)
    # x: 16 x 32 float32 = 2048 B per piece, double-buffered
    assert "regst 0 register_num 2 out:(16, 32) float32  2048 B/piece -> tasks" in out
    assert "matmul0: (a:S0, b:B) -> S0 on [m0:d0, m1:d0]" in out
    assert re.search(r"total: \d+ regst descs, \d+ B written per piece, 1280 B per piece cross "
                     "machines", out)  # half the batch out (1024 B) + half the result back
    # every task type the plan uses, described by its kind record
    assert "task types:\n" in out
    assert "  comm_net: on the receiving machine: brings a regst produced on another machine " \
           "here" in out


def test_dot_draws_machines_as_clusters(capsys):
    rc, out, _ = flow(capsys, "plan", "dot", str(EXAMPLES / "pipeline_4_stages.py"),
                      "--machines", "4")
    assert rc == 0
    plan = af.compile(_job("pipeline_4_stages", 4), machines=4)
    assert out.startswith('digraph "pipeline_4_stages" {') and out.rstrip().endswith("}")
    assert out.count("{") == out.count("}")
    for m in range(4):
        assert f"subgraph cluster_m{m} {{" in out
        assert f'label="machine {m}"' in out
    for t in plan.tasks:
        assert f"t{t.task_id} [label=" in out
    edges = sum(len(d.consumer_task_ids) for d in plan.regst_descs().values())
    assert len(re.findall(r"^  t\d+ -> t\d+ \[label=\"r\d+ x2 \d+B\"\];$", out, re.M)) == edges


def _job(name: str, machines: int):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.build_job(machines)


def test_validate_and_save_round_trip(capsys, tmp_path):
    target = str(EXAMPLES / "matmul_model_parallel.py")
    rc, out, _ = flow(capsys, "plan", "validate", target, "--machines", "2")
    assert rc == 0 and out.startswith(f"ok: {target}: 13 tasks")
    rc, out, _ = flow(capsys, "plan", "save", target, str(tmp_path / "mm.plan"), "--machines", "2")
    assert rc == 0
    plan = af.load_plan(tmp_path / "mm.plan")
    assert len(plan.tasks) == 13 and plan.machines.count == 2
    rc, out, _ = flow(capsys, "plan", "show", str(tmp_path / "mm.plan"))
    assert "matmul0: (a:S1, b:S0) -> P" in out
    rc, _, _ = flow(capsys, "plan", "save", target, str(tmp_path / "mm.json"), "--machines", "2")
    rc, out, _ = flow(capsys, "plan", "validate", str(tmp_path / "mm.json"))
    assert rc == 0 and "13 tasks" in out


def test_bad_targets_fail_in_one_line(capsys, tmp_path):
    bad = tmp_path / "nojob.py"
    bad.write_text("X = 1\n")
    rc, _, err = flow(capsys, "plan", "show", str(bad))
    assert rc == 1
    assert err.strip().count("\n") == 0
    assert "must define build_plan(machines), build_job(machines)" in err
    rc, _, err = flow(capsys, "plan", "validate", str(EXAMPLES / "pipeline_4_stages.py"),
                      "--machines", "0")
    assert rc == 1 and "--machines must be at least 1, got 0" in err
    broken = tmp_path / "broken.py"
    broken.write_text("def build_job(machines):\n    return 1 / 0\n")
    rc, _, err = flow(capsys, "plan", "show", str(broken))
    assert rc == 1 and "build_job(machines=1) failed: ZeroDivisionError" in err
    with pytest.raises(SystemExit):
        main(["plan", "show"])
    capsys.readouterr()
