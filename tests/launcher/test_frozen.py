"""Frozen processes (SIGSTOP) are detected by default and blamed on the right machine.

A stopped process neither exits nor answers; without a check the run either hangs or
blames the neighbour that lost it.  Each case stops one process of a live ``flowlaunch
sim`` run and checks the time to fail, the machine named, and that nothing is left.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from tests.launcher.helpers import JOBS, cmdline, tagged_pids
from tests.launcher.test_failures import EXEC, _shm, _wait_for_line, _worker_pid


def _ppid(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def _unit_pid(tag: str, worker: int, timeout: float = 20.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pid in tagged_pids(tag):
            if "actorflow.actors.process_unit" in cmdline(pid) and _ppid(pid) == worker:
                return pid
        time.sleep(0.05)
    raise AssertionError(f"no unit process of worker {worker}")


def _stop_and_wait(p, victim: int) -> str:
    """SIGSTOP ``victim``; the run's stderr once flowlaunch ended (bounded: a frozen process
    must be noticed, never waited for)."""
    os.kill(victim, signal.SIGSTOP)
    _out, err = p.communicate(timeout=60)
    return err


@pytest.mark.slow
def test_stopped_unit_process_fails_the_run_naming_its_machine(flowlaunch):
    tag, p = flowlaunch.start("sim", *EXEC, JOBS / "slow_pipeline.py", "--machines", 2,
                              "--unit", "process")
    _wait_for_line(p.stderr, "progress:", 30)
    worker = _worker_pid(tag, 1)
    argv = cmdline(worker)
    run_id = argv[argv.index("--run-id") + 1]
    unit = _unit_pid(tag, worker)
    err = _stop_and_wait(p, unit)
    assert p.returncode != 0
    head = err[err.index("flowlaunch: run failed"):].splitlines()[0]
    assert head.startswith("flowlaunch: run failed: machine 1 (rank 1"), head
    assert f"pid {unit}" in head and "is stopped" in head, head
    assert tagged_pids(tag) == []
    assert {n for n in _shm() if run_id in n} == set()


@pytest.mark.parametrize("rank", [0, 1])
def test_stopped_worker_is_the_root_cause(flowlaunch, rank):
    """rank 0 stopped: the others lose the master, but the stopped master is named."""
    tag, p = flowlaunch.start("sim", *EXEC, JOBS / "slow_pipeline.py", "--machines", 2)
    _wait_for_line(p.stderr, "progress:", 30)
    victim = _worker_pid(tag, rank)
    err = _stop_and_wait(p, victim)
    assert p.returncode != 0
    table = err[err.index("flowlaunch: run failed"):]
    head = table.splitlines()[0]
    assert head.startswith(f"flowlaunch: run failed: machine {rank} (rank {rank}"), head
    root = [x for x in table.splitlines() if x.startswith("*")]
    assert len(root) == 1 and root[0].split()[1] == str(rank), table
    assert tagged_pids(tag) == []
