"""``flowlaunch sim`` forks its workers from the warm launcher (``launcher/forked.py``).

Forked workers must keep every guarantee of exec'd ones: the same outputs, the launcher's
failure table when one dies, and no orphan process or shared-memory segment when the
launcher itself is killed (each child has its own session and PR_SET_PDEATHSIG).
A forked worker shows the launcher's cmdline in /proc, so these tests find workers as the
launcher's children in fork order (rank order) and a run's segments through their maps.
"""

from __future__ import annotations

import os
import signal
import time

import numpy as np

from tests.launcher.helpers import JOBS, SAMPLE, tagged_pids
from tests.launcher.test_failures import _shm, _wait_for_line


def _children(pid: int) -> list[int]:
    """Child pids of ``pid`` in start order."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(") ", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if ppid == pid:
                out.append(int(d))
    return sorted(out)


def _mapped_shm(pid: int) -> set[str]:
    try:
        with open(f"/proc/{pid}/maps") as f:
            return {line.rsplit("/", 1)[1].strip() for line in f if "/dev/shm/actorflow" in line}
    except OSError:
        return set()


def _wait_for_workers(launcher: int, n: int, timeout: float = 20.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        kids = _children(launcher)
        if len(kids) >= n:
            return kids
        time.sleep(0.05)
    raise AssertionError(f"expected {n} forked workers of {launcher}, saw {_children(launcher)}")


def test_fork_and_exec_workers_give_the_same_outputs(flowlaunch, tmp_path):
    outs = {}
    for method in ("fork", "exec"):
        out = tmp_path / f"{method}.npz"
        r = flowlaunch.run("sim", SAMPLE, "--machines", 3, "--out", out,
                           "--start-method", method)
        assert r.returncode == 0, r.stderr
        assert "16 pieces on 3 machines" in r.stdout and "OK" in r.stdout, r.stdout
        with np.load(out) as f:
            outs[method] = f["colsum"]
    np.testing.assert_array_equal(outs["fork"], outs["exec"])


def test_forked_workers_are_sessions_of_their_own(flowlaunch):
    """Each forked worker leads its own process group (teardown signals the group)."""
    tag, p = flowlaunch.start("sim", JOBS / "slow_pipeline.py", "--machines", 2)
    _wait_for_line(p.stderr, "progress:", 30)
    kids = _wait_for_workers(p.pid, 2)
    assert [os.getpgid(k) for k in kids] == kids and all(os.getsid(k) == k for k in kids)
    p.send_signal(signal.SIGINT)
    _out, err = p.communicate(timeout=30)
    assert p.returncode == 128 + signal.SIGINT and "interrupted by SIGINT; stopped 2 rank(s)" in err
    assert tagged_pids(tag) == []


def test_sigkill_forked_worker_is_named_in_the_failure_table(flowlaunch):
    tag, p = flowlaunch.start("sim", JOBS / "slow_pipeline.py", "--machines", 3)
    _wait_for_line(p.stderr, "progress:", 30)
    victim = _wait_for_workers(p.pid, 3)[1]  # forked in rank order
    os.kill(victim, signal.SIGKILL)
    _out, err = p.communicate(timeout=30)
    assert p.returncode != 0
    head = err[err.index("flowlaunch: run failed"):].splitlines()[0]
    assert head.startswith("flowlaunch: run failed: machine 1 (rank 1 on 127.0.0.1"), head
    assert "killed by SIGKILL" in head or "lost: no heartbeat" in head, head
    assert tagged_pids(tag) == [], "processes of the run remain"


def test_killed_launcher_leaves_no_forked_orphans_or_shm(flowlaunch):
    tag, p = flowlaunch.start("sim", JOBS / "slow_pipeline.py", "--machines", 2,
                              "--unit", "process")
    _wait_for_line(p.stderr, "progress:", 30)
    kids = _wait_for_workers(p.pid, 2)
    segments = set().union(*(_mapped_shm(k) for k in kids))
    assert segments, "process units should map their run's shared memory"
    p.kill()  # SIGKILL: no teardown by the launcher; PDEATHSIG must stop the workers
    p.communicate(timeout=10)
    deadline = time.monotonic() + 10
    while tagged_pids(tag) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert tagged_pids(tag) == [], "forked workers outlived the launcher"
    assert segments & _shm() == set(), "shared memory of the run remains"
