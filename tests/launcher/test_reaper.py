"""The reaper (``python -m actorflow.launcher.reaper``) and the leftovers it removes.

The reaper is what ``flowlaunch run`` starts over ssh: it runs the worker and cleans the
host after it.  Here it runs small shell "workers" through its real command line, so
each way a worker can end (SIGKILL, orphans, the session closing, a stop signal, a
worker that ignores SIGTERM) is checked in a fraction of a second;
``test_remote_clean.py`` drives it under ``flowlaunch run``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from actorflow.errors import LaunchError
from actorflow.launcher.leftovers import check_run_id, leftovers, remove_leftovers
from tests.procs import pid_alive

REAPER = [sys.executable, "-m", "actorflow.launcher.reaper"]


def _run_id() -> str:
    return uuid.uuid4().hex[:8]


def _start(run_id: str, machine: int, script: str, tmp_path: Path,
           grace: float = 0.3) -> subprocess.Popen:
    env = dict(os.environ, TMPDIR=str(tmp_path))
    return subprocess.Popen([*REAPER, "--run-id", run_id, "--machine", str(machine),
                             "--grace", str(grace), "--", "sh", "-c", script],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)


def _finish(p: subprocess.Popen, timeout: float = 10.0) -> tuple[int, str, str]:
    if p.stdin is not None and p.stdin.closed:
        p.stdin = None  # closed by the test (the session's end): communicate must not flush
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        pytest.fail(f"the reaper did not end within {timeout}s")
    return p.returncode, out, err


def _wait_for(path: Path, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def test_a_sigkilled_worker_machine_leftovers_are_removed_and_no_others(tmp_path):
    rid, other = _run_id(), _run_id()
    keep = [Path(f"/dev/shm/actorflow{rid}_m10_d1"), Path(f"/dev/shm/actorflow{rid}_m2_d1"),
            Path(f"/dev/shm/actorflow{other}_m1_d1"), tmp_path / f"actorflow-{rid}-m10-x"]
    for k in keep:  # machine 10 and 2 of this run, machine 1 of another: not ours
        k.mkdir() if k.parent == tmp_path else k.write_bytes(b"x")
    try:
        p = _start(rid, 1, f'mkdir "$TMPDIR/actorflow-{rid}-m1-abc" && '
                           f': > /dev/shm/actorflow{rid}_m1_d3 && : > /dev/shm/actorflow{rid}_m1_d4'
                           ' && kill -9 $$', tmp_path)
        code, _out, err = _finish(p)
        assert code == 128 + signal.SIGKILL  # as a shell reports it: ssh passes it on
        assert err.strip() == (f"flowlaunch reaper: the worker of machine 1 failed: killed by "
                               f"SIGKILL; removed 3 leftover(s) of run {rid} on this host")
        assert leftovers(rid, 1, tmpdir=str(tmp_path)) == []
        assert all(k.exists() for k in keep)
    finally:
        for k in keep:
            k.rmdir() if k.is_dir() else k.unlink()


def test_orphans_of_a_killed_worker_are_killed_and_reaped(tmp_path):
    """A sleeper in the worker's group and one that left it (setsid): both end with it."""
    p = _start(_run_id(), 0, "sleep 30 & echo $! > pids; setsid sleep 30 & echo $! >> pids; "
                             "sleep 0.2; kill -9 $$", tmp_path)
    code, _out, _err = _finish(p)
    assert code == 137
    pids = [int(x) for x in (tmp_path / "pids").read_text().split()]
    assert len(pids) == 2 and not any(pid_alive(x) for x in pids)


def test_stdin_reaches_the_worker_and_its_end_stops_the_worker(tmp_path):
    """The key line passes through as bytes; EOF (the ssh session closed) ends the worker:
    first by itself, else SIGTERM after the grace period."""
    p = _start(_run_id(), 0, 'read -r line; echo "$line" > got; exec sleep 30', tmp_path)
    assert p.stdin is not None
    p.stdin.write("k3y-line\n")
    p.stdin.flush()
    _wait_for(tmp_path / "got")
    assert (tmp_path / "got").read_text() == "k3y-line\n"
    p.stdin.close()
    code, _out, _err = _finish(p)
    assert code == 128 + signal.SIGTERM  # it did not stop by itself within the grace


def test_a_worker_that_stops_by_itself_at_eof_is_not_signalled(tmp_path):
    """EOF first gives the worker the grace to stop by itself (a long one here, so the
    order does not depend on the load): it exits 0, no SIGTERM reaches it."""
    p = _start(_run_id(), 0, "trap 'echo TERM >> got; exit 9' TERM; echo up > up; "
                             "while read -r line; do :; done; echo eof >> got; exit 0",
               tmp_path, grace=60)
    _wait_for(tmp_path / "up")
    assert p.stdin is not None
    p.stdin.close()
    code, _out, _err = _finish(p)
    assert code == 0 and (tmp_path / "got").read_text() == "eof\n"


def test_a_worker_that_ignores_sigterm_is_killed_a_grace_later(tmp_path):
    """EOF, grace, SIGTERM (noted, survived), grace, SIGKILL: the note shows TERM came
    first."""
    p = _start(_run_id(), 0, "trap 'echo TERM >> got' TERM; echo up > up; "
                             "while :; do sleep 0.05; done", tmp_path)
    _wait_for(tmp_path / "up")
    assert p.stdin is not None
    p.stdin.close()
    code, _out, _err = _finish(p)
    assert code == 128 + signal.SIGKILL
    assert (tmp_path / "got").read_text().split() == ["TERM"]


def test_a_stopped_worker_is_continued_so_sigterm_ends_it(tmp_path):
    p = _start(_run_id(), 0, "echo up > up; kill -STOP $$; sleep 30", tmp_path)
    _wait_for(tmp_path / "up")
    p.send_signal(signal.SIGTERM)
    code, _out, _err = _finish(p)
    assert code == 128 + signal.SIGTERM


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_stop_signal_to_the_reaper_is_forwarded_to_the_worker(tmp_path, sig):
    name = sig.name[3:]
    p = _start(_run_id(), 0, f"trap 'echo got {name}; exit 5' {name}; echo up > up; "
                             "while :; do sleep 0.05; done", tmp_path)
    _wait_for(tmp_path / "up")
    p.send_signal(sig)
    code, out, _err = _finish(p)
    assert code == 5 and f"got {name}" in out


@pytest.mark.parametrize("argv,needle", [
    (["--run-id", "", "--machine", "0", "--", "true"], "run id '': expected 1 to 64 letters"),
    (["--run-id", "ab", "--machine", "0", "true"], "expected OPTIONS -- COMMAND"),
    (["--run-id", "ab", "--machine", "-1", "--", "true"], "error: --machine -1: must not be"),
    (["--run-id", "ab", "--machine", "0", "--grace", "-2", "--", "true"], "--grace -2: must"),
])
def test_bad_reaper_arguments_are_one_line(argv, needle):
    r = subprocess.run([*REAPER, *argv], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and needle in r.stderr, r.stderr


def test_a_worker_that_cannot_start_is_127(tmp_path):
    r = subprocess.run([*REAPER, "--run-id", "ab", "--machine", "0", "--",
                        str(tmp_path / "no-such-python")], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 127
    assert "flowlaunch reaper: error: cannot start" in r.stderr and "no-such-python" in r.stderr


def test_leftovers_are_scoped_to_run_and_machine(tmp_path):
    shm, tmp = tmp_path / "shm", tmp_path / "tmp"
    shm.mkdir()
    tmp.mkdir()
    for n in ["actorflowab_m1_d1", "actorflowab_m12_d1", "actorflowabc_m1_d1", "other"]:
        (shm / n).write_bytes(b"")
    for n in ["actorflow-ab-m1-q", "actorflow-ab-m12-q", "actorflow-ab-key-q",
              "actorflow-abc-m1-q"]:
        (tmp / n).mkdir()
    kw = {"tmpdir": str(tmp), "shm_dir": str(shm)}
    assert [Path(x).name for x in remove_leftovers("ab", 1, **kw)] == [
        "actorflowab_m1_d1", "actorflow-ab-m1-q"]
    # the whole run (the launcher, on its own host): every machine and the key directory
    assert [Path(x).name for x in remove_leftovers("ab", **kw)] == [
        "actorflowab_m12_d1", "actorflow-ab-key-q", "actorflow-ab-m12-q"]
    assert sorted(p.name for p in [*shm.iterdir(), *tmp.iterdir()]) == [
        "actorflow-abc-m1-q", "actorflowabc_m1_d1", "other"]


@pytest.mark.parametrize("bad", ["", "../x", "a b", "x" * 65])
def test_a_run_id_that_could_match_other_files_is_refused(bad):
    with pytest.raises(LaunchError, match="expected 1 to 64 letters or digits"):
        check_run_id(bad)
