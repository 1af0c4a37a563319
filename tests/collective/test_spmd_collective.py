"""Collectives between real processes: under flowlaunch, under a bare environment launcher,
and with a rank killed mid-collective."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from actorflow.launcher.ports import free_port
from actorflow.transport.auth import ClusterKey
from tests.launcher.helpers import REPO

SCRIPTS = Path(__file__).parent / "scripts"


def _key_file(tmp_path: Path) -> str:
    """What any launcher hands its ranks: the path of a mode-600 key file, in the env."""
    return str(ClusterKey.generate().write(tmp_path / "cluster.key"))


def _checks(stdout: str) -> dict[int, dict]:
    docs = [json.loads(line.split("CHECKS ", 1)[1]) for line in stdout.splitlines()
            if "CHECKS " in line]
    return {d["rank"]: d for d in docs}


@pytest.mark.parametrize("how", [("--nproc-per-node", "3", "--master-port", "0"),
                                 ("sim", "--machines", "3")])
def test_every_collective_under_flowlaunch(flowlaunch, how):
    """``flowlaunch --nproc-per-node 3 script.py`` and ``flowlaunch sim script.py``: the
    world group meets through rank 0's rendezvous and every collective is right."""
    args = [*how[:1], str(SCRIPTS / "spmd_ops.py"), *how[1:]] if how[0] == "sim" else [
        *how, str(SCRIPTS / "spmd_ops.py")]
    r = flowlaunch.run(*args, timeout=60)
    assert r.returncode == 0, r.stderr
    docs = _checks(r.stdout)
    assert sorted(docs) == [0, 1, 2]
    for rank, d in docs.items():
        assert d["world"] == 3 and d["local_rank"] == rank
        assert d["checks"] and all(d["checks"].values()), d["checks"]


def test_a_rank_killed_mid_collective_is_named_by_every_other_rank_within_3s(tmp_path):
    """Four processes started with only the five variables (any launcher); rank 2 SIGKILLs
    itself inside a 16 MiB all-reduce.  Ranks 0, 1, 3 fail with RankLost naming rank 2 (the
    collective timeout is 10 minutes, so only the loss, noticed at once, can end them within
    the 40 s wait), and every process ends."""
    port = free_port("127.0.0.1")
    key = _key_file(tmp_path)
    procs = []
    for rank in range(4):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE="4",
                   RANK=str(rank), LOCAL_RANK=str(rank), PYTHONUNBUFFERED="1",
                   ACTORFLOW_CLUSTER_KEY=key, ACTORFLOW_COLLECTIVE_TIMEOUT="600")
        procs.append(subprocess.Popen(
            [sys.executable, str(SCRIPTS / "kill_mid.py"), str(tmp_path), "2"], env=env,
            cwd=str(REPO), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    try:
        codes = [p.wait(timeout=40) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.communicate(timeout=30)
    assert (tmp_path / "killed.json").exists()
    assert codes[2] == -9
    for rank in (0, 1, 3):
        assert codes[rank] == 3, procs[rank].stderr
        got = json.loads((tmp_path / f"rank{rank}.json").read_text())
        assert got["type"] == "RankLost" and got["lost"] == 2, got
        assert "rank 2 died" in got["msg"] and "all_reduce" in got["msg"]


def test_the_collectives_example_on_four_simulated_machines(flowlaunch):
    r = flowlaunch.run("sim", str(REPO / "examples" / "collectives.py"), "--machines", "4",
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("agree with numpy") == 4
    assert "shape: [10, 7] on rank 3 but [10, 6] on rank 0" in r.stdout


def test_a_rank_that_never_starts_fails_the_others_within_the_timeout(tmp_path):
    """Ranks 0 and 1 of 3 start (rank 2 never does): both fail within the collective
    timeout (2 s here), naming rank 2, instead of waiting for ever."""
    port = free_port("127.0.0.1")
    key = _key_file(tmp_path)
    procs = []
    for rank in (0, 1):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE="3",
                   RANK=str(rank), LOCAL_RANK=str(rank), ACTORFLOW_COLLECTIVE_TIMEOUT="2",
                   ACTORFLOW_CLUSTER_KEY=key)
        procs.append(subprocess.Popen([sys.executable, str(SCRIPTS / "meet.py")], env=env,
                                      cwd=str(REPO), stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    try:
        outs = [p.communicate(timeout=30) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate(timeout=30)
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 3, err
        doc = json.loads(out.split("MEET ", 1)[1])
        assert not doc["ok"] and "[2]" in doc["msg"], doc
        assert "never joined within 2s" in doc["msg"], doc  # the timeout it was given


@pytest.mark.parametrize("key_mode, needle", [
    (None, "rank 1 of 2 has no cluster key, so its sockets would accept anyone: set "
           "ACTORFLOW_CLUSTER_KEY=FILE"),
    (0o644, "the file is accessible to group or others (mode 644)"),
])
def test_a_launcher_without_a_usable_key_is_refused_before_any_socket(tmp_path, key_mode,
                                                                      needle):
    """Ranks started by another launcher (only the five variables) with no key, or with a
    key file others can read, fail at once with one clear error, before opening a port."""
    extra = {}
    if key_mode is not None:
        path = ClusterKey.generate().write(tmp_path / "k")
        path.chmod(key_mode)
        extra = {"ACTORFLOW_CLUSTER_KEY": str(path)}
    env = {k: v for k, v in os.environ.items()
           if k not in ("ACTORFLOW_CLUSTER_KEY", "ACTORFLOW_INSECURE")}
    env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port("127.0.0.1")),
               WORLD_SIZE="2", RANK="1", LOCAL_RANK="1", **extra)
    r = subprocess.run([sys.executable, str(SCRIPTS / "meet.py")], env=env, cwd=str(REPO),
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 3, r.stderr
    doc = json.loads(r.stdout.split("MEET ", 1)[1])
    assert needle in doc["msg"], doc
