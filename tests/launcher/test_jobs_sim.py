"""flowlaunch sim of multi-job files (build_jobs + drive): numbers, trace, failures."""

from __future__ import annotations

import json

import numpy as np

from .helpers import JOBS, REPO

EXAMPLE = REPO / "examples" / "update_and_eval.py"


def test_sim_runs_update_and_eval_by_name_and_checks_numpy(flowlaunch, tmp_path):
    out = tmp_path / "r.npz"
    r = flowlaunch.run("sim", EXAMPLE, "--machines", 2, "--unit", "process", "--json",
                       "--out", out, timeout=120)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["ok"] is True and doc["machines_count"] == 2
    assert doc["jobs"] == {"__load__": 0, "__save__": 0, "eval": 7, "update": 6}
    assert "max |actorflow - numpy|" in doc["check"] and doc["check"].endswith("OK")
    with np.load(out) as f:
        losses = f["loss"]
    assert losses.shape == (7,) and np.all(np.diff(losses) < 0)  # the updates reduce loss


def test_sim_trace_shows_each_jobs_critical_section(flowlaunch, tmp_path):
    tr = tmp_path / "tr"
    r = flowlaunch.run("sim", EXAMPLE, "--machines", 2, "--trace", tr, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "jobs eval x7, update x6 on 2 machines" in r.stdout
    r = flowlaunch.run("trace", "export", tr, "-o", tmp_path / "t.json")
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "t.json").read_text())
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    tracks = {e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    for cs, job in enumerate(["update", "eval"]):
        for m in (0, 1):
            assert any(f"main/identity_tick_cs{cs}_m{m}" in t for t in tracks)
        assert any(t.startswith("task ") and f" {job}/" in t for t in tracks)
    acts = [e for e in events if e.get("ph") == "X" and "callback_tick_cs1_m1" in str(
        [t for t in tracks if t.endswith("callback_tick]")])]
    assert acts


def test_sim_failure_names_job_task_and_piece(flowlaunch):
    r = flowlaunch.run("sim", JOBS / "jobs_broken.py", "--machines", 2, timeout=120)
    assert r.returncode == 1
    assert "FAILED" in r.stdout
    assert "piece 0 of job 'eval' did not finish: job 'eval', task" in r.stderr
    assert "actorflow-b.npy" in r.stderr


def test_run_over_hosts_refuses_multi_job_files_with_the_way_out(flowlaunch):
    r = flowlaunch.run("run", EXAMPLE, "--hosts", "127.0.0.1")
    assert r.returncode != 0
    assert "run it with `flowlaunch sim FILE --machines N`" in r.stderr


def test_plan_validate_and_show_of_a_multi_job_file(flowlaunch):
    r = flowlaunch.run("plan", "validate", EXAMPLE, "--machines", 3)
    assert r.returncode == 0, r.stderr
    assert "every rule and the dry run pass" in r.stdout
    r = flowlaunch.run("plan", "show", EXAMPLE, "--machines", 2)
    assert r.returncode == 0, r.stderr
    assert "job 0 'update'" in r.stdout and "main job:" in r.stdout
