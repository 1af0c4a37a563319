"""Eager global tensors between real processes: one ``flowlaunch --nproc-per-node 4`` run
whose ranks each run a derandomized hypothesis oracle (random shapes, placements of 1-4
ranks, SBPs and op sequences give the numpy result on every rank), every boxing pair with
uneven splits, randn/ones by region, and the consistency check naming ranks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.launcher.helpers import Launcher

SCRIPT = Path(__file__).parent / "scripts" / "global_oracle.py"


@pytest.fixture
def flowlaunch():
    launcher = Launcher()
    yield launcher
    left = launcher.cleanup()
    assert not left, f"processes of a flowlaunch run were left behind: {left}"


@pytest.mark.timeout(120)
def test_global_tensor_oracle_on_four_ranks(flowlaunch):
    r = flowlaunch.run("--nproc-per-node", "4", "--master-port", "0", str(SCRIPT), timeout=100)
    assert r.returncode == 0, r.stderr[-3000:]
    docs = {d["rank"]: d for d in (json.loads(line.split("GLOBAL ", 1)[1])
                                   for line in r.stdout.splitlines() if "GLOBAL " in line)}
    assert sorted(docs) == [0, 1, 2, 3]
    for rank, d in docs.items():
        assert d["problems"] == [], (rank, d["problems"])
        assert d["examples"] == 25 and d["ops"] > 10
        assert len(d["boxings"]) == 16, d["boxings"]  # every (src, dst) pair of S0 S1 B P
        assert "dtype: 'float64' on rank 3 but 'float32' on rank" in d["caught"], d["caught"]


@pytest.mark.timeout(90)
def test_global_tensors_example_runs_on_four_ranks(flowlaunch):
    example = Path(__file__).resolve().parents[2] / "examples" / "global_tensors.py"
    r = flowlaunch.run("--nproc-per-node", "4", "--master-port", "0", str(example),
                       timeout=80)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.count("global tensors match numpy") == 4, r.stdout
