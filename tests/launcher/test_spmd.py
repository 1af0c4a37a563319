"""SPMD mode: ``flowlaunch --nproc-per-node K ... script.py args`` exports the rank variables."""

from __future__ import annotations

import json
import re
import signal
import sys
import time

import numpy as np

from tests.launcher.helpers import JOBS, SAMPLE

sys.path.insert(0, str(SAMPLE.parent))
import sample_pipeline

SCRIPT = JOBS / "spmd_env.py"


def _envs(stdout: str) -> dict[int, dict]:
    out = {}
    for line in stdout.splitlines():
        if "] ENV " in line:
            prefix, _, doc = line.partition("] ENV ")
            d = json.loads(doc)
            assert prefix == f"[rank {d['RANK']}"  # lines carry their rank prefix
            out[int(d["RANK"])] = d
    return out


def test_spmd_exports_rank_variables(flowlaunch):
    r = flowlaunch.run("--nproc-per-node", 3, "--master-port", 0, SCRIPT, "a1", "--x", "2",
                       timeout=60)
    assert r.returncode == 0, r.stderr
    envs = _envs(r.stdout)
    assert sorted(envs) == [0, 1, 2]
    port = envs[0]["MASTER_PORT"]
    assert int(port) > 0
    for rank, d in envs.items():
        assert d["WORLD_SIZE"] == "3" and d["LOCAL_RANK"] == str(rank)
        assert d["LOCAL_WORLD_SIZE"] == "3" and d["MASTER_ADDR"] == "127.0.0.1"
        assert d["MASTER_PORT"] == port and d["argv"] == ["a1", "--x", "2"]


def test_spmd_second_node_ranks(flowlaunch):
    r = flowlaunch.run("--nnodes", 2, "--node-rank", 1, "--nproc-per-node", 2,
                       "--master-addr", "127.0.0.1", "--master-port", 29999, SCRIPT,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    envs = _envs(r.stdout)
    assert sorted(envs) == [2, 3]
    assert [envs[k]["LOCAL_RANK"] for k in (2, 3)] == ["0", "1"]
    assert all(d["WORLD_SIZE"] == "4" and d["MASTER_PORT"] == "29999" for d in envs.values())


def test_spmd_failure_table_names_the_failed_rank(flowlaunch):
    r = flowlaunch.run("--nproc-per-node", 2, "--master-port", 0, SCRIPT, "--fail-rank", "1",
                       timeout=60)
    assert r.returncode == 1
    rows = [x for x in r.stderr.splitlines() if x.startswith("*")]
    assert len(rows) == 1 and rows[0].split()[1] == "1" and "exit 7" in rows[0]
    assert "rank failed on purpose" in rows[0]


def test_spmd_forwards_sigterm(flowlaunch, tmp_path):
    marker = tmp_path / "term"
    _tag, p = flowlaunch.start("--nproc-per-node", 2, "--master-port", 0, SCRIPT,
                               "--wait-term", marker)
    seen = 0
    deadline = time.monotonic() + 30
    while seen < 2 and time.monotonic() < deadline:
        line = p.stdout.readline()
        seen += "] waiting" in line
    assert seen == 2
    p.send_signal(signal.SIGTERM)
    p.communicate(timeout=30)
    assert p.returncode == 128 + signal.SIGTERM
    assert sorted(x.name for x in tmp_path.iterdir()) == ["term.0", "term.1"]


def test_spmd_runs_actorflow_workers_from_env(flowlaunch, tmp_path):
    """Workers started SPMD-style read RANK/WORLD_SIZE/MASTER_* and run the sample job."""
    out = tmp_path / "o.npz"
    r = flowlaunch.run("--nproc-per-node", 2, "--master-port", 0, "-m",
                       "actorflow.launcher.cli", "worker", SAMPLE, "--out", out, timeout=90)
    assert r.returncode == 0, r.stderr + r.stdout
    # worker mode ends with sim's summary line (rank 0 holds the master), SPMD with its own
    lines = r.stdout.strip().splitlines()
    n = sample_pipeline.PIECES
    assert any(re.fullmatch(rf"\[rank 0\] \w+: {n} pieces on 2 machines in [\d.]+s "
                            rf"\([\d.]+ pieces/s, (native|python) core\); "
                            rf"outputs saved to {re.escape(str(out))}", x)
               for x in lines), lines[-5:]
    assert re.fullmatch(r"actorflow\.launcher\.cli: 2 ranks in [\d.]+s", lines[-1]), lines[-1]
    with np.load(out) as f:
        got = f["colsum"]
    assert len(got) == sample_pipeline.PIECES
    np.testing.assert_allclose(got[3], sample_pipeline.expected(3), rtol=1e-5, atol=1e-6)
