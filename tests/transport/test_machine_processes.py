"""Machines as separate OS processes, each a MachineNode on its own sub-plan, over tcp.

The test plays the coordinator (addresses, a start barrier); the real control plane is
flowlaunch's.  Also: a machine process SIGKILLed takes its unit processes with it, and the
launcher-side ``remove_leftovers`` removes the shared memory it left.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import actorflow as af
from actorflow.launcher.leftovers import remove_leftovers
from actorflow.plan.io import save_plan
from actorflow.transport.shm import list_run_segments

HELPER = str(Path(__file__).with_name("machine_proc.py"))


@pytest.fixture
def procs():
    started: list[subprocess.Popen] = []
    yield started
    for p in started:
        if p.poll() is None:
            p.kill()
        p.wait(10)
        for f in (p.stdin, p.stdout, p.stderr):
            if f is not None:
                f.close()


def chain_plan(machines: int, pieces: int, ms: float = 0.0):
    b = af.PlanBuilder(machines=machines, register_num=2)
    x = b.source("constant", {"shape": [32, 32], "dtype": "float64", "value": 1.0,
                              "piece_scale": 1.0}, piece_num=pieces)
    h = b.op("sleep", x, ms=ms) if ms else x
    for k in range(machines):
        h = b.op("scalar_mul", h, scalar=2.0, machine=k)
    h = b.op("scalar_add", h, scalar=1.0, machine=machines - 1)
    b.output("y", h)
    return b.build()


def _readline(p: subprocess.Popen, timeout: float = 30.0) -> dict:
    import selectors

    sel = selectors.DefaultSelector()
    sel.register(p.stdout, selectors.EVENT_READ)
    if not sel.select(timeout):
        raise AssertionError(f"machine process {p.pid} said nothing for {timeout}s")
    line = p.stdout.readline()
    if not line:
        raise AssertionError(f"machine process {p.pid} exited: {p.stderr.read()}")
    return json.loads(line)


def launch(plan, tmp_path: Path, unit: str, run_id: str, procs: list) -> list[subprocess.Popen]:
    machines = plan.machines.count
    ps = []
    for m in range(machines):
        sub = save_plan(plan.for_machine(m), tmp_path / f"m{m}.plan")
        p = subprocess.Popen(
            [sys.executable, HELPER, str(sub), str(m), unit, run_id, str(tmp_path / f"m{m}.npz")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(p)
        ps.append(p)
    addrs = {m: _readline(p)["addr"] for m, p in enumerate(ps)}
    for p in ps:
        p.stdin.write(json.dumps(addrs) + "\n")
        p.stdin.flush()
    return ps


@pytest.mark.parametrize(("machines", "unit"), [(2, "thread"), (3, "process")])
def test_machines_in_separate_processes_give_numpy_numbers(tmp_path, procs, machines, unit):
    plan = chain_plan(machines, pieces=10)
    ps = launch(plan, tmp_path, unit, f"t{machines}{os.getpid()}", procs)
    for p in ps:
        assert _readline(p)["started"]
    for p in ps:
        p.stdin.write("go\n")
        p.stdin.flush()
    for p in ps:
        assert p.wait(60) == 0, p.stderr.read()
    with np.load(tmp_path / f"m{machines - 1}.npz") as z:
        got = {k: z[k] for k in z.files}
    assert sorted(got) == sorted(f"y_{i}" for i in range(10))
    for i in range(10):
        np.testing.assert_array_equal(got[f"y_{i}"], np.full((32, 32), (1.0 + i) * 2**machines + 1))


def test_killed_machine_process_takes_its_units_and_cleanup_removes_its_shm(tmp_path, procs):
    plan = chain_plan(1, pieces=1000, ms=5.0)
    run_id = f"k{os.getpid()}"
    (p,) = launch(plan, tmp_path, "process", run_id, procs)
    units = _readline(p)["unit_pids"]
    assert units and list_run_segments(run_id)
    p.stdin.write("go\n")
    p.stdin.flush()
    assert _readline(p) == {"delivered": 0}  # pieces flow through the unit processes
    os.kill(p.pid, signal.SIGKILL)
    p.wait(10)
    deadline = time.monotonic() + 5
    while any(os.path.exists(f"/proc/{u}") for u in units) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(os.path.exists(f"/proc/{u}") for u in units), "unit outlived its machine"
    assert list_run_segments(run_id), "a SIGKILLed node cannot unlink: the launcher must"
    assert remove_leftovers(run_id)  # what the launcher does after a killed worker
    assert list_run_segments(run_id) == []
