"""why-stuck on a live run: SIGUSR1 makes the process dump every actor's state."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from tests.trace.plans import ROOT, flowlaunch

CHILD = textwrap.dedent('''
    import sys
    import numpy as np
    import actorflow as af

    b = af.PlanBuilder(register_num=1)
    x = b.input("x", (4,), "float32")
    h = b.op("sleep", x, ms=60000.0, only_piece=1, name="slowpoke")
    b.output("y", b.op("relu", h, name="after"))
    s = af.Session(b.build(), timeout=120)
    s.run({"x": np.ones(4, np.float32)})
    s.feed({"x": np.ones(4, np.float32)})
    print("ready", flush=True)
    s.fetch()
''')


def test_why_stuck_pid_asks_a_live_run(tmp_path):
    env = dict(os.environ, ACTORFLOW_DUMP_DIR=str(tmp_path))
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    try:
        assert child.stdout.readline().strip() == "ready"
        r = subprocess.run([sys.executable, "-m", "actorflow.launcher.cli", "trace",
                            "why-stuck", "--pid", str(child.pid), "--timeout", "20"],
                           capture_output=True, text=True, timeout=60, env=env, cwd=ROOT)
        assert r.returncode == 0, r.stderr
        assert "(sigusr1)" in r.stdout
        assert "root: task 1 (slowpoke) is inside its kernel on piece 1" in r.stdout
        assert "task 2 (after) waits for READY on regst desc 1 from task 1 (slowpoke)" \
            in r.stdout
        assert list((tmp_path / str(child.pid)).glob("flight-sigusr1-*.afdump"))
        assert child.poll() is None  # the run goes on after the dump
    finally:
        child.kill()
        child.wait(10)


def test_why_stuck_pid_of_a_missing_process_is_a_clear_error(tmp_path):
    r = flowlaunch("trace", "why-stuck", "--pid", "999999", "--dump-dir", tmp_path)
    assert r.returncode == 1 and "no process 999999" in r.stderr


STALL_JOB = '''
import actorflow as af

def build_plan(machines=2):
    b = af.PlanBuilder(machines=machines, register_num=1, name="stall")
    x = b.source("random_normal", {"shape": [4], "dtype": "float32", "seed": 1},
                 piece_num=6, name="src")
    h = b.op("relu", x, name="before")
    h = b.op("sleep", h, ms=30000.0, only_piece=2, machine=machines - 1, name="stuck")
    b.output("y", b.op("relu", h, machine=machines - 1, name="after"))
    return b.build()
'''


@pytest.mark.slow
def test_why_stuck_pid_of_a_flowlaunch_sim_asks_every_worker(tmp_path):
    job = tmp_path / "stall.py"
    job.write_text(STALL_JOB)
    env = dict(os.environ, ACTORFLOW_DUMP_DIR=str(tmp_path / "dumps"))
    sim = subprocess.Popen([sys.executable, "-m", "actorflow.launcher.cli", "sim", str(job),
                            "--machines", "2", "--quiet"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT)
    try:
        joined = set()
        for line in sim.stdout:  # wait until both machines joined and the run started
            joined |= {r for r in ("rank 0 joined", "rank 1 joined") if r in line}
            if len(joined) == 2:
                break
        deadline = time.monotonic() + 60  # until the run reached piece 2 and hangs there
        while True:
            r = subprocess.run([sys.executable, "-m", "actorflow.launcher.cli", "trace",
                                "why-stuck", "--pid", str(sim.pid), "--timeout", "20"],
                               capture_output=True, text=True, timeout=60, env=env, cwd=ROOT)
            assert r.returncode == 0, r.stderr
            if "is inside its kernel on piece 2" in r.stdout or time.monotonic() > deadline:
                break
        assert sum(line.startswith("dump ") for line in r.stdout.splitlines()) == 2
        assert "root: task 2 (stuck) is inside its kernel on piece 2" in r.stdout
        assert "task 1 (before) [running]: waits for a free regst of desc 1 held by " \
               "task 3 (comm_net1->m1)" in r.stdout
        assert sim.poll() is None  # the launcher forwarded the signal; nobody died of it
    finally:
        sim.terminate()  # the launcher tears its workers down
        sim.communicate(timeout=30)
