"""Failures: a SIGKILLed worker, a kernel that raises on machine 1, and bad input.

Each case runs the real CLI as a subprocess with a timeout: it must end quickly, exit
non-zero, name the culprit in one line (or in the failure table), and leave no process
of the run and no /dev/shm/actorflow* segment behind.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest

from tests.launcher.helpers import JOBS, SAMPLE, cmdline, tagged_pids

# these tests read a worker's rank and run id from its /proc cmdline, which only an exec'd
# worker has (a forked one shows the launcher's); test_sim_fork.py covers forked workers
EXEC = ("--start-method", "exec")


def _shm() -> set[str]:
    return {n for n in os.listdir("/dev/shm") if n.startswith("actorflow")}


def _worker_pid(tag: str, rank: int, timeout: float = 20.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pid in tagged_pids(tag):
            argv = cmdline(pid)
            if "worker" in argv and argv[argv.index("--rank") + 1] == str(rank):
                return pid
        time.sleep(0.05)
    raise AssertionError(f"worker of rank {rank} never started")


def _wait_for_line(stream, needle: str, timeout: float) -> list[str]:
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = stream.readline()
        if not line:
            break
        seen.append(line)
        if needle in line:
            return seen
    raise AssertionError(f"never saw {needle!r}; got {''.join(seen)}")


@pytest.mark.parametrize("unit", ["thread", pytest.param("process", marks=pytest.mark.slow)])
def test_sigkill_worker_mid_run(flowlaunch, unit):
    tag, p = flowlaunch.start("sim", JOBS / "slow_pipeline.py", "--machines", 3,
                              "--unit", unit, *EXEC)
    seen = _wait_for_line(p.stderr, "progress:", 30)  # the run is under way (1 s of pieces)
    # the progress line: pieces, pieces/s, elapsed, and pieces per machine
    assert re.fullmatch(r"progress: \d+ pieces, [\d.]+ pieces/s, [\d.]+s "
                        r"\[m0 \d+, m1 \d+, m2 \d+\]", seen[-1].strip()), seen[-1]
    victim = _worker_pid(tag, 1)
    argv = cmdline(victim)
    run_id = argv[argv.index("--run-id") + 1]
    if unit == "process":
        assert any(run_id in n for n in _shm()), "process units should use shared memory"
    os.kill(victim, signal.SIGKILL)
    _out, err = p.communicate(timeout=60)
    assert p.returncode != 0
    table = err[err.index("flowlaunch: run failed"):]
    head = table.splitlines()[0]  # one line naming the machine and what happened to it
    assert head.startswith("flowlaunch: run failed: machine 1 (rank 1 on 127.0.0.1"), head
    assert "killed by SIGKILL" in head or "lost: no heartbeat" in head, head
    root = [x for x in table.splitlines() if x.startswith("*")]
    assert len(root) == 1 and root[0].split()[1] == "1", table  # machine 1 is the root cause
    assert tagged_pids(tag) == [], "processes of the run remain"
    assert {n for n in _shm() if run_id in n} == set(), "shared memory of the run remains"


@pytest.mark.slow
def test_killed_launcher_leaves_no_orphans_or_shm(flowlaunch):
    """PR_SET_PDEATHSIG: workers get SIGTERM when flowlaunch dies, close units, unlink shm."""
    tag, p = flowlaunch.start("sim", JOBS / "slow_pipeline.py", "--machines", 2,
                              "--unit", "process", *EXEC)
    _wait_for_line(p.stderr, "progress:", 30)
    argv = cmdline(_worker_pid(tag, 0))
    run_id = argv[argv.index("--run-id") + 1]
    assert any(run_id in n for n in _shm())
    p.kill()
    p.communicate(timeout=10)
    deadline = time.monotonic() + 10
    while tagged_pids(tag) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert tagged_pids(tag) == [], "workers outlived the launcher"
    assert {n for n in _shm() if run_id in n} == set(), "shared memory of the run remains"


def test_kernel_error_on_machine_1_names_op_task_machine(flowlaunch):
    r = flowlaunch.run("sim", JOBS / "fail_machine1.py", "--machines", 2, "--json", timeout=60)
    assert r.returncode == 1
    doc = json.loads(r.stdout)  # --json: one object on stdout, even on failure
    assert doc["ok"] is False and doc["error"]["rank"] == 1
    kernel = doc["error"]["kernel"]
    assert kernel["op_name"] == "boom_m1" and kernel["machine_id"] == 1
    assert kernel["piece_id"] == 2 and "RuntimeError: injected failure" in kernel["traceback"]
    codes = [m["exit_code"] for m in doc["machines"]]
    assert codes[1] == 1 and codes[0] in (3, 143)  # 3: aborted by the master (143: by us)
    table = r.stderr[r.stderr.index("flowlaunch: run failed"):]
    head = table.splitlines()[0]
    assert head.startswith("flowlaunch: run failed: machine 1 (rank 1 on 127.0.0.1"), head
    assert "kernel of op 'boom_m1' (task" in head and "machine 1) failed on piece 2" in head
    root = [x for x in table.splitlines() if x.startswith("*")]
    assert len(root) == 1, table
    row = root[0]
    assert row.split()[1] == "1"                       # rank/machine 1 is the root cause
    assert "op 'boom_m1'" in row and "machine 1" in row and "task" in row
    assert "injected failure" in row
    assert "root cause (*): rank 1" in table
    # the original traceback reaches the rank's output too (stderr with --json)
    assert "RuntimeError: injected failure" in r.stderr.split("flowlaunch: run failed")[0]


def test_worker_unreachable_master_is_one_line(flowlaunch):
    r = flowlaunch.run("worker", "--rank", 1, "--world-size", 2, "--master", "127.0.0.1:9",
                       "--connect-timeout", 1, timeout=30)
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "could not reach the master at 127.0.0.1:9 within 1.0s" in lines[0]


@pytest.mark.parametrize("args,env,needle", [
    (["--rank", "2", "--world-size", "2", "--master", "127.0.0.1:29500"], {},
     "rank 2 out of range for world size 2"),
    ([], {"RANK": "5", "WORLD_SIZE": "4", "MASTER_ADDR": "h", "MASTER_PORT": "1"},
     "rank 5 out of range for world size 4 (from RANK/WORLD_SIZE"),
    ([], {"SLURM_PROCID": "x", "SLURM_NTASKS": "2"}, "SLURM_PROCID='x' is not an integer"),
    (["--rank", "0", "--world-size", "1"], {}, "no master address"),
    (["--rank", "0", "--world-size", "1", "--master", "nohostport"], {}, "expected HOST:PORT"),
])
def test_worker_bad_rank_input(flowlaunch, args, env, needle):
    drop = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
    base = {k: v for k, v in os.environ.items()
            if k not in drop and not k.startswith(("SLURM_", "OMPI_"))}
    r = _run_clean(flowlaunch, ["worker", *args], {**base, **env})
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], r.stderr


def _run_clean(flowlaunch, args, env):
    """Run with exactly ``env`` (no inherited rank variables)."""
    tag, _ = flowlaunch.env()
    return subprocess.run([sys.executable, "-m", "actorflow.launcher.cli", *map(str, args)],
                          env=dict(env, ACTORFLOW_TEST_TAG=tag), capture_output=True,
                          text=True, timeout=30)


def test_rank_out_of_range_rejected_by_master(flowlaunch):
    """A worker started with a world size the master does not have is told so, at once."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    _tag, p0 = flowlaunch.start("worker", SAMPLE, "--rank", 0, "--world-size", 2,
                                "--master", f"127.0.0.1:{port}", "--join-timeout", 20)
    r = flowlaunch.run("worker", "--rank", 1, "--world-size", 3, "--master",
                       f"127.0.0.1:{port}", "--connect-timeout", 10, timeout=30)
    assert r.returncode == 1
    assert "rejected rank 1: rank 1 was started with world size 3 but the master has 2" in \
        r.stderr
    p0.send_signal(signal.SIGTERM)
    p0.communicate(timeout=20)


@pytest.mark.parametrize("hosts,needle", [
    ("", "--hosts is empty"),
    ("node1,,node2", "--hosts entry 2 (''): empty host name"),
    ("node1,bad host", "'bad host' is not a host name"),
    ("node1:zero", "slots 'zero' is not an integer"),
    ("localhost,localhost", "host 'localhost' is listed twice"),
    ("nosuchhost.invalid", "cannot resolve host 'nosuchhost.invalid'"),
])
def test_run_wrong_hosts_is_one_line(flowlaunch, hosts, needle):
    r = flowlaunch.run("run", SAMPLE, "--hosts", hosts, timeout=30)
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], r.stderr


def test_run_timeout_stops_everything(flowlaunch):
    r = flowlaunch.run("sim", JOBS / "slow_pipeline.py", "--machines", 2, "--timeout", 1,
                       "--quiet", timeout=30)
    assert r.returncode == 1
    assert "flowlaunch: run failed: run exceeded --timeout 1s" in r.stderr, r.stderr


def test_broken_job_file_reaches_every_worker_fast(flowlaunch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    master = f"127.0.0.1:{port}"
    _tag, p0 = flowlaunch.start("worker", JOBS / "broken_job.py", "--rank", 0,
                                "--world-size", 2, "--master", master)
    r1 = flowlaunch.run("worker", "--rank", 1, "--world-size", 2, "--master", master,
                        timeout=30)
    _out, err0 = p0.communicate(timeout=30)
    want = "broken_job.py: build_plan(machines=2) failed: ValueError: this job is broken"
    for code, err in ((p0.returncode, err0), (r1.returncode, r1.stderr)):
        lines = err.strip().splitlines()
        assert code == 1 and len(lines) == 1 and want in lines[0], err


@pytest.mark.slow
def test_sigint_to_flowlaunch_is_forwarded_and_cleans_up(flowlaunch):
    tag, p = flowlaunch.start("sim", JOBS / "slow_pipeline.py", "--machines", 2,
                              "--unit", "process", *EXEC)
    _wait_for_line(p.stderr, "progress:", 30)
    argv = cmdline(_worker_pid(tag, 1))
    run_id = argv[argv.index("--run-id") + 1]
    p.send_signal(signal.SIGINT)  # what Ctrl-C does (workers sit in their own sessions)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 128 + signal.SIGINT
    assert "interrupted by SIGINT; stopped 2 rank(s)" in err  # one line; ranks' goodbyes
    assert "Traceback" not in out + err                      # go to their logs only
    assert tagged_pids(tag) == []
    assert {n for n in _shm() if run_id in n} == set()
