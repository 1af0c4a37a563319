"""Clean edges: leftovers removed on every exit path, dumps pruned, one line for Ctrl-C,
careful why-stuck, refused --machines and --trace mistakes.  All through the real CLI."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from tests.launcher.helpers import JOBS, SAMPLE, cmdline, tagged_pids
from tests.launcher.test_failures import EXEC, _shm, _wait_for_line, _worker_pid


def _ipc_dirs(run_id: str, tmp: str | None = None) -> list[str]:
    base = tmp or tempfile.gettempdir()
    return [n for n in os.listdir(base) if n.startswith(f"actorflow-{run_id}")]


def test_too_many_machines_is_refused_with_the_limit_and_flag(flowlaunch):
    r = flowlaunch.run("sim", SAMPLE, "--machines", 1000, timeout=30)
    assert r.returncode == 1
    err = r.stderr.strip()
    assert err.count("\n") == 0 and "Traceback" not in err
    assert "--machines 1000 is more than this host can simulate (limit " in err
    assert "--allow-many-machines" in err  # one line, refused up front


def test_sixteen_machines_are_within_the_limit():
    from actorflow.launcher.cmd_sim import machine_limit

    assert machine_limit()[0] >= 16


def test_trace_into_a_non_empty_directory_needs_force(flowlaunch, tmp_path):
    d = tmp_path / "tr"
    d.mkdir()
    (d / "machine-0.aftrace").write_bytes(b"old run")
    r = flowlaunch.run("sim", SAMPLE, "--machines", 2, "--trace", d, timeout=60)
    assert r.returncode == 1
    assert f"--trace {d}: the directory is not empty (1 entries, e.g. machine-0.aftrace)" \
        in r.stderr and "--force" in r.stderr
    assert sorted(p.name for p in d.iterdir()) == ["machine-0.aftrace"]  # untouched
    r = flowlaunch.run("sim", SAMPLE, "--machines", 2, "--trace", d, "--force", "--quiet",
                       timeout=90)
    assert r.returncode == 0, r.stderr
    assert {"machine-0.aftrace", "machine-1.aftrace"} <= {p.name for p in d.iterdir()}
    assert (d / "machine-0.aftrace").read_bytes() != b"old run"


def _pending_signals(pid: int) -> int:
    """The signals pending for ``pid`` (thread and process masks), from /proc."""
    with open(f"/proc/{pid}/status") as f:
        fields = dict(line.split(":", 1) for line in f if ":" in line)
    return int(fields["SigPnd"], 16) | int(fields["ShdPnd"], 16)


def test_why_stuck_refuses_a_process_that_is_not_a_run():
    # a 'sleep' with SIGUSR1 blocked (the mask survives exec): a SIGUSR1 sent to it would
    # stay pending, so /proc shows whether one was ever sent, with no waiting
    sleeper = subprocess.Popen([sys.executable, "-c", (
        "import os, signal; signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1]); "
        "os.execvp('sleep', ['sleep', '30'])")])
    try:
        deadline = time.monotonic() + 30
        while _comm(sleeper.pid) != "sleep" and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _comm(sleeper.pid) == "sleep"
        r = subprocess.run(["flowlaunch", "trace", "why-stuck", "--pid", str(sleeper.pid)],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 1
        assert f"process {sleeper.pid} (sleep) is not an actorflow run" in r.stderr
        assert "nothing was sent" in r.stderr
        assert sleeper.poll() is None
        assert not _pending_signals(sleeper.pid) & (1 << (signal.SIGUSR1 - 1))  # never sent
    finally:
        sleeper.kill()
        sleeper.wait()


def _comm(pid: int) -> str:
    with open(f"/proc/{pid}/comm") as f:
        return f.read().strip()


@pytest.mark.slow
def test_ctrl_c_is_one_line_and_130_and_leaves_nothing(flowlaunch, tmp_path):
    tag, p = flowlaunch.start("sim", *EXEC, JOBS / "slow_pipeline.py", "--machines", 2,
                              "--unit", "process", "--log-dir", tmp_path)
    _wait_for_line(p.stderr, "progress:", 30)
    argv = cmdline(_worker_pid(tag, 1))
    run_id = argv[argv.index("--run-id") + 1]
    assert _ipc_dirs(run_id), "process units should have an ipc directory"
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 130
    assert err.strip().splitlines() == ["flowlaunch: interrupted by SIGINT; stopped 2 rank(s)"]
    assert "Traceback" not in out + err
    # the SIGINT is forwarded; the teardown's SIGTERM may reach a rank first (timing), and
    # the forwarding itself is checked by test_failures' SIGINT test
    log = (tmp_path / "rank1.log").read_text()
    assert "stopped by SIGINT" in log or "stopped by SIGTERM" in log, log
    assert tagged_pids(tag) == []
    assert {n for n in _shm() if run_id in n} == set()
    assert _ipc_dirs(run_id) == []


@pytest.mark.slow
def test_killed_worker_leaves_no_ipc_directory(flowlaunch):
    tag, p = flowlaunch.start("sim", *EXEC, JOBS / "slow_pipeline.py", "--machines", 2,
                              "--unit", "process")
    _wait_for_line(p.stderr, "progress:", 30)
    victim = _worker_pid(tag, 1)
    argv = cmdline(victim)
    run_id = argv[argv.index("--run-id") + 1]
    assert any(n.startswith(f"actorflow-{run_id}-m1-") for n in _ipc_dirs(run_id))
    os.kill(victim, signal.SIGKILL)
    p.communicate(timeout=30)
    assert p.returncode != 0
    assert _ipc_dirs(run_id) == []
    assert {n for n in _shm() if run_id in n} == set()


def test_flight_dumps_are_kept_for_the_last_n_runs(flowlaunch, tmp_path):
    root = tmp_path / "actorflow-dumps"
    for i in range(5):  # five old runs' dumps, oldest first
        d = root / str(100 + i)
        d.mkdir(parents=True)
        (d / "x.afdump").write_text("old")
        os.utime(d, (time.time() - 100 + i, time.time() - 100 + i))
    env = {"TMPDIR": str(tmp_path), "ACTORFLOW_KEEP_DUMPS": "3"}
    r = flowlaunch.run("sim", SAMPLE, "--machines", 1, "--quiet", env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert sorted(d.name for d in root.iterdir()) == ["102", "103", "104"]
