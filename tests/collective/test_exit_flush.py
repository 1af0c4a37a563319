"""A rank's last collective messages leave before its process exits, and a dead peer does
not hold the exit up.

The messages of a collective go as zero-copy frames that ZeroMQ's I/O thread sends after
``send`` returned; a rank that returns from its last collective and exits at once still has
them queued when its peer is slow.  Rank 1 is paused (SIGSTOP) so rank 0's 64 MiB broadcast
cannot leave before rank 0 reaches its exit."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from actorflow.launcher.ports import free_port
from actorflow.transport.auth import ClusterKey
from tests.collective.spmd_run import Lines
from tests.launcher.helpers import REPO

SCRIPT = Path(__file__).parent / "scripts" / "send_and_exit.py"


def _start(tmp_path: Path, exit_timeout: str) -> tuple[list[subprocess.Popen], list[Lines]]:
    port = free_port("127.0.0.1")
    key = str(ClusterKey.generate().write(tmp_path / "cluster.key"))
    procs = []
    for rank in range(2):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE="2",
                   RANK=str(rank), LOCAL_RANK=str(rank), PYTHONUNBUFFERED="1",
                   ACTORFLOW_CLUSTER_KEY=key, ACTORFLOW_COLLECTIVE_EXIT_TIMEOUT=exit_timeout)
        procs.append(subprocess.Popen(
            [sys.executable, str(SCRIPT), str(tmp_path / "gate")], env=env, cwd=str(REPO),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    return procs, [Lines(p) for p in procs]


def _pause_rank1_and_send(tmp_path: Path, procs, lines) -> None:
    """Rank 1 paused inside the broadcast's wait, then rank 0 sends and heads for exit
    (both met first: a rank paused right after the barrier may hold the other's back)."""
    for r in (0, 1):
        lines[r].wait(f"MESH UP rank {r}", 1, 60)
    os.kill(procs[1].pid, signal.SIGSTOP)
    (tmp_path / "gate").touch()
    lines[0].wait("SENT", 1, 60)


def _reap(procs) -> None:
    for p in procs:
        if p.poll() is None:
            os.kill(p.pid, signal.SIGCONT)
            p.kill()
        p.wait(timeout=30)


def test_a_ranks_last_broadcast_arrives_whole_though_it_exited_while_the_peer_paused(
        tmp_path):
    """Rank 0 exits right after a 64 MiB broadcast while rank 1 is paused; once rank 1
    resumes it receives every byte, and rank 0 ends cleanly.  (Before the fix rank 0's
    exit dropped the queued chunks, and pyzmq's exit hook freed their memory: rank 1 saw
    rank 0 leave mid-broadcast.)"""
    procs, lines = _start(tmp_path, "120")
    try:
        _pause_rank1_and_send(tmp_path, procs, lines)
        try:  # a rank that drops what is queued is gone by now; one that flushes waits
            procs[0].wait(timeout=3)
        except subprocess.TimeoutExpired:
            pass
        os.kill(procs[1].pid, signal.SIGCONT)
        lines[1].wait("RESULT", 1, 60)
        err0 = lines[0].rest(60)
        err1 = lines[1].rest(60)
    finally:
        _reap(procs)
    doc = json.loads(next(s for s in lines[1].seen if "RESULT" in s).split("RESULT ", 1)[1])
    assert doc == {"ok": True, "rows_ok": 8 << 20}, err1
    assert procs[0].returncode == 0, err0
    assert procs[1].returncode == 0, err1


@pytest.mark.parametrize("peer", ["killed", "paused"])
def test_an_exiting_rank_does_not_wait_on_a_dead_or_stuck_peer(tmp_path, peer):
    """Rank 0 exits with its broadcast queued for rank 1, which is killed (its loss ends the
    wait at once, though the exit timeout is 10 minutes) or stays paused (the exit timeout,
    1 s here, ends it, and rank 0 says what it gave up on)."""
    procs, lines = _start(tmp_path, "600" if peer == "killed" else "1")
    try:
        _pause_rank1_and_send(tmp_path, procs, lines)
        if peer == "killed":
            procs[1].kill()
        procs[0].wait(timeout=30)  # a hang here is the failure
        err0 = lines[0].rest(30)
    finally:
        _reap(procs)
    assert procs[0].returncode == 0, err0
    if peer == "paused":
        assert "rank 0 left before its last messages to rank 1 were sent" in err0, err0
        assert "ACTORFLOW_COLLECTIVE_EXIT_TIMEOUT" in err0, err0
