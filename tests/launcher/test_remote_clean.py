"""``flowlaunch run`` leaves no leftovers on any host, however a remote worker ends.

Each "host" behind the fake ssh (tests/launcher/fake_ssh.py, ``FAKE_SSH_HOSTS_DIR``) has a
temp directory and a /dev/shm of its own, as a real host has, and the remote command runs
detached from the launcher (``FAKE_SSH_DETACH``) as under a real sshd.  So the launcher's
clean-up of its own host cannot be what removed a host's segments or ipc directory: only
that host's reaper can.  The run uses process units, whose regsts live in /dev/shm and
whose sockets live in an ipc directory.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from tests.launcher.helpers import JOBS, SAMPLE, cmdline, install_fake_ssh, tagged_pids
from tests.launcher.test_failures import _wait_for_line


def _unavailable() -> str:
    if os.geteuid() != 0:
        return "a host's own /dev/shm needs a mount namespace (root)"
    try:
        r = subprocess.run(["unshare", "--mount", "true"], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"unshare: {e}"
    return "" if r.returncode == 0 else f"unshare --mount: {r.stderr.decode().strip()}"


_WHY = _unavailable()
HOSTS = ["127.0.0.1", "localhost"]  # rank 0 (the master) on the first, rank 1 on the other


@pytest.fixture
def hosts_dir():
    """Short (under /tmp): a host's ipc socket paths must stay within 100 characters."""
    if _WHY:
        pytest.skip(_WHY)
    d = Path(tempfile.mkdtemp(prefix="afh", dir="/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _env(tmp_path: Path, hosts_dir: Path) -> dict:
    bin_dir = tmp_path / "bin"
    install_fake_ssh(bin_dir)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "FAKE_SSH_DETACH": "1",
            "FAKE_SSH_HOSTS_DIR": str(hosts_dir)}


def _host_leftovers(hosts_dir: Path, host: str, run_id: str) -> list[str]:
    shm = [n for n in os.listdir(hosts_dir / host / "shm") if n.startswith(f"actorflow{run_id}")]
    tmp = [n for n in os.listdir(hosts_dir / host / "tmp")
           if n.startswith(f"actorflow-{run_id}")]
    return sorted(shm + tmp)


def _workers(tag: str) -> dict[int, int]:
    """rank -> pid of each ``flowlaunch worker`` (not its reaper, whose argv holds one)."""
    out = {}
    for pid in tagged_pids(tag):
        argv = cmdline(pid)
        if argv[1:4] == ["-m", "actorflow.launcher.cli", "worker"]:
            out[int(argv[argv.index("--rank") + 1])] = pid
    return out


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def _start_and_wait_for_pieces(flowlaunch, env: dict) -> tuple[str, subprocess.Popen, str]:
    tag, p = flowlaunch.start("run", JOBS / "slow_pipeline.py", "--hosts", ",".join(HOSTS),
                              "--master-port", 0, "--unit", "process", env=env)
    _wait_for_line(p.stderr, "progress:", 30)
    workers = _workers(tag)
    assert sorted(workers) == [0, 1], workers
    argv = cmdline(workers[1])
    return tag, p, argv[argv.index("--run-id") + 1]


def _wait_until_clean(tag: str, hosts_dir: Path, run_id: str, timeout: float = 10.0) -> None:
    """Every process of the run ends and every host loses its leftovers of the run."""
    deadline = time.monotonic() + timeout
    while True:
        left = {h: _host_leftovers(hosts_dir, h, run_id) for h in HOSTS}
        procs = tagged_pids(tag)
        if not any(left.values()) and not procs:
            return
        assert time.monotonic() < deadline, f"left after {timeout}s: {left}, pids {procs}"
        time.sleep(0.05)


def _assert_on_its_host(hosts_dir: Path, run_id: str) -> None:
    """Machine 1's segments and ipc directory are on host 'localhost', not here."""
    mine = _host_leftovers(hosts_dir, "localhost", run_id)
    assert any(n.startswith(f"actorflow{run_id}_m1_d") for n in mine), mine
    assert any(n.startswith(f"actorflow-{run_id}-m1-") for n in mine), mine
    assert not [n for n in os.listdir("/dev/shm") if n.startswith(f"actorflow{run_id}")]


@pytest.mark.parametrize("victim", ["worker", pytest.param("unit process",
                                                           marks=pytest.mark.slow)])
def test_a_sigkilled_remote_process_leaves_its_host_clean(flowlaunch, tmp_path, hosts_dir,
                                                          victim):
    tag, p, run_id = _start_and_wait_for_pieces(flowlaunch, _env(tmp_path, hosts_dir))
    _assert_on_its_host(hosts_dir, run_id)
    worker = _workers(tag)[1]
    if victim == "worker":
        pid = worker
    else:
        units = [c for c in _children(worker) if "actorflow.actors.process_unit" in cmdline(c)]
        assert units, "machine 1 runs no unit process"
        pid = units[0]
    os.kill(pid, signal.SIGKILL)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 1
    head = next(x for x in err.splitlines() if x.startswith("flowlaunch: run failed"))
    assert "machine 1 (rank 1 on localhost" in head, head
    if victim == "worker":  # nothing of it could clean up: its reaper did, and said so
        said = [x for x in out.splitlines() if x.startswith("[rank 1] flowlaunch reaper:")]
        assert len(said) == 1, out
        m = re.search(r"the worker of machine 1 failed: killed by SIGKILL; removed (\d+) "
                      rf"leftover\(s\) of run {run_id} on this host$", said[0])
        assert m and int(m.group(1)) >= 2, said  # its segments and its ipc directory
    _wait_until_clean(tag, hosts_dir, run_id)


@pytest.mark.slow
def test_a_killed_launcher_leaves_every_host_clean(flowlaunch, tmp_path, hosts_dir):
    """Signals do not cross ssh: each remote worker stops when its session closes, and its
    reaper cleans the host after it.  (Was test_run_ssh's launcher-dies test, which checked
    only that the workers stop.)"""
    tag, p, run_id = _start_and_wait_for_pieces(flowlaunch, _env(tmp_path, hosts_dir))
    _assert_on_its_host(hosts_dir, run_id)
    workers = _workers(tag)
    reapers = [pid for pid in tagged_pids(tag) if "actorflow.launcher.reaper" in cmdline(pid)]
    assert len(reapers) == 2
    assert all(os.getsid(r) == r for r in reapers)  # detached: out of the launcher's reach
    assert all(os.getpgid(w) == w for w in workers.values())  # each in a group of its own
    p.kill()  # SIGKILL: no teardown by the launcher; its ssh children die with it
    p.communicate(timeout=10)
    _wait_until_clean(tag, hosts_dir, run_id)


def test_a_normal_run_leaves_every_host_clean(flowlaunch, tmp_path, hosts_dir):
    r = flowlaunch.run("run", SAMPLE, "--hosts", ",".join(HOSTS),
                       "--master-port", 0, "--unit", "process", "--json",
                       env=_env(tmp_path, hosts_dir), timeout=60)
    assert r.returncode == 0, r.stderr
    run_id = json.loads(r.stdout)["run_id"]
    assert all(_host_leftovers(hosts_dir, h, run_id) == [] for h in HOSTS)
    assert "flowlaunch reaper" not in r.stderr  # the worker cleaned up itself: nothing said
