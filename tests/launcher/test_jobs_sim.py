"""flowlaunch sim/run of multi-job files (build_jobs + drive): worker processes per machine,
rank 0 drives the jobs by name; numbers vs numpy, trace, failure table."""

from __future__ import annotations

import json
import os
import re

import numpy as np

from tests.launcher.helpers import JOBS, REPO, install_fake_ssh

EXAMPLE = REPO / "examples" / "update_and_eval.py"


def test_sim_runs_update_and_eval_by_name_and_checks_numpy(flowlaunch, tmp_path):
    out = tmp_path / "r.npz"
    r = flowlaunch.run("sim", EXAMPLE, "--machines", 3, "--unit", "process", "--json",
                       "--out", out, timeout=120)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["ok"] is True and [m["rank"] for m in doc["machines"]] == [0, 1, 2]
    assert "max |actorflow - numpy|" in doc["check"] and doc["check"].endswith("OK")
    with np.load(out) as f:  # what drive returned, through the master
        losses, ws = f["loss"].reshape(-1), f["w"]
    assert losses.shape == (7,) and np.all(np.diff(losses) < 0)  # the updates reduce loss
    assert ws.shape == (6, 4, 1)


def test_sim_trace_shows_each_jobs_critical_section(flowlaunch, tmp_path):
    tr = tmp_path / "tr"
    r = flowlaunch.run("sim", EXAMPLE, "--machines", 2, "--trace", tr, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "on 2 machines" in r.stdout and "check: max |actorflow - numpy|" in r.stdout
    r = flowlaunch.run("trace", "export", tr, "-o", tmp_path / "t.json")
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "t.json").read_text())
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    acts: dict[str, int] = {}  # act slices carry the actor's label (messages: READY/ACK)
    for e in events:
        if e.get("ph") == "X":
            acts[e["name"]] = acts.get(e["name"], 0) + 1

    def count(prefix: str) -> int:
        return sum(n for name, n in acts.items() if name.startswith(prefix))

    # each job's critical section: its identity ticks (one per machine) act once per piece
    assert acts["main/identity_tick_cs0_m1"] == 6  # update ran 6 times
    assert acts["main/identity_tick_cs1_m0"] == 7  # eval ran 7 times
    # every request is 4 critical sections: push x, push y, the job, pull its output
    assert acts["main/esac"] == 13 * 4
    assert count("push:update/x/") == 6 and acts["pull:eval/loss/pulled"] == 7
    assert count("update/") > 0 and count("eval/") > 0


def test_sim_failure_names_job_task_and_piece_in_the_failure_table(flowlaunch):
    r = flowlaunch.run("sim", JOBS / "jobs_broken.py", "--machines", 2, timeout=120)
    assert r.returncode == 1
    # both machines' parts of variable b fail to load; whichever fails first, the headline
    # names the job, the task and the piece (rank 0's driver, when it speaks first, adds
    # "piece 0 of job 'eval' did not finish")
    head = r.stderr[r.stderr.index("flowlaunch: run failed"):].splitlines()[0]
    assert re.search(r"kernel of op 'b@\d' \(job 'eval', task \d+, machine \d\) failed on "
                     r"piece 0", head), head
    assert "actorflow-b.npy" in r.stderr
    assert "root cause (*)" in r.stderr and "rank  host" in r.stderr  # the failure table


def test_run_over_fake_ssh_drives_a_multi_job_file(flowlaunch, tmp_path):
    bin_dir = tmp_path / "bin"
    install_fake_ssh(bin_dir)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "FAKE_SSH_LOG": str(tmp_path / "ssh.log")}
    r = flowlaunch.run("run", EXAMPLE, "--hosts", "127.0.0.1,localhost", "--master-port", 0,
                       env=env, timeout=120)
    assert r.returncode == 0, r.stderr + r.stdout
    assert "on 2 machines" in r.stdout and "OK" in r.stdout


def test_a_saved_multi_job_plan_without_its_driver_is_refused(flowlaunch, tmp_path):
    r = flowlaunch.run("plan", "save", EXAMPLE, tmp_path / "m.plan", "--machines", 2)
    assert r.returncode == 0, r.stderr
    r = flowlaunch.run("sim", tmp_path / "m.plan", "--machines", 2)
    assert r.returncode != 0
    assert "a multi-job plan is driven by a job file's drive(session)" in r.stderr


def test_plan_validate_and_show_of_a_multi_job_file(flowlaunch):
    r = flowlaunch.run("plan", "validate", EXAMPLE, "--machines", 3)
    assert r.returncode == 0, r.stderr
    assert "every rule and the dry run pass" in r.stdout
    r = flowlaunch.run("plan", "show", EXAMPLE, "--machines", 2)
    assert r.returncode == 0, r.stderr
    assert "job 0 'update'" in r.stdout and "main job:" in r.stdout


def test_save_from_a_flowlaunch_run_has_every_machines_part(flowlaunch, tmp_path):
    import actorflow as af

    ck = tmp_path / "ck"
    r = flowlaunch.run("sim", JOBS / "jobs_save.py", "--machines", 2, "--unit", "process",
                       env={"ACTORFLOW_TEST_CKPT": str(ck)}, timeout=120)
    assert r.returncode == 0, r.stderr
    parts = json.loads((ck / "manifest.json").read_text())["variables"]["w"]["parts"]
    assert [p["machine"] for p in parts] == [0, 1]  # written by each machine's process
    P = af.placement("cpu", ranks=[0])
    with af.Job("read") as rd:
        af.output("w", af.variable("w", (4, 3), path=ck, placement=P))
    with af.Session(af.compile([rd], machines=1)) as s:
        np.testing.assert_array_equal(s.run("read"),
                                      np.arange(12, dtype=np.float32).reshape(4, 3))


_LOOSE_JOB = '''
import numpy as np
import actorflow as af
{tolerance}

def build_plan(machines=2):
    b = af.PlanBuilder(machines=machines, register_num=2, name="loose")
    x = b.source("random_normal", {{"shape": [4], "dtype": "float64", "seed": 3}},
                 piece_num=3, machine=0, name="x")
    b.output("x", x)
    b.output("y", b.op("relu", x, machine=machines - 1))
    return b.build()


def check(outputs):
    # the error against numpy plus a fixed 5e-4: a check whose number is not elementwise
    return max(float(np.abs(y - np.maximum(x, 0)).max())
               for x, y in zip(outputs["x"], outputs["y"], strict=True)) + 5e-4
'''


def test_a_job_files_check_tolerance_is_the_bound_its_check_must_meet(flowlaunch, tmp_path):
    results = {}
    for name, line in [("default", ""), ("loose", "CHECK_TOLERANCE = 1e-3"),
                       ("tight", "CHECK_TOLERANCE = 4e-4")]:
        job = tmp_path / f"{name}.py"
        job.write_text(_LOOSE_JOB.format(tolerance=line))
        r = flowlaunch.run("sim", job, "--machines", 2, "--json", timeout=60)
        results[name] = (r.returncode, json.loads(r.stdout)["check"])
    assert results["loose"] == (0, "check: max |actorflow - numpy| = 5.00e-04 OK")
    assert results["default"] == (1, "check: max |actorflow - numpy| = 5.00e-04 FAILED")
    assert results["tight"] == (1, "check: max |actorflow - numpy| = 5.00e-04 FAILED")
    bad = tmp_path / "bad.py"
    bad.write_text(_LOOSE_JOB.format(tolerance="CHECK_TOLERANCE = 'loose'"))
    r = flowlaunch.run("sim", bad, "--machines", 2, timeout=60)
    assert r.returncode != 0
    assert f"{bad}: CHECK_TOLERANCE must be a finite number >= 0" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
