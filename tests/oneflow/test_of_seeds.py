"""Each seed's code sample (``seeds/*.py``: the text of seeds 002, 003 and 004, see the
glossary in docs/architecture.md, with ``import oneflow as flow`` changed to ``import
actorflow as flow``, nothing else) runs and gives OneFlow 0.9.0's values (issue 21, items 4
and 5).

Seed 003's sample is run the way seed 003 runs it: three processes started by hand with
``MASTER_ADDR/MASTER_PORT/WORLD_SIZE/RANK/LOCAL_RANK`` (plus the run's key, made with
``flowlaunch key new``), no launcher.
"""

from __future__ import annotations

import json
import os
import runpy
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import actorflow as flow

SEEDS = Path(__file__).parent / "seeds"
RUNNER = Path(__file__).parent / "seed_runner.py"


def run_seed(name: str) -> dict:
    return runpy.run_path(str(SEEDS / name))


def test_seed_002_relu_on_cuda(emulated_device, capsys):
    ns = run_seed("seed_002_relu.py")  # device="cuda": the emulated device (no GPU here)
    y = ns["y"]
    assert y.device.type == "cuda" and y.tolist() == [0.0, 2.0] and y.dtype is flow.float32
    assert "tensor([0., 2.]" in capsys.readouterr().out  # OneFlow: tensor([0., 2.], ...)


def test_seed_004_relu_of_ints():
    r = run_seed("seed_004_relu.py")["r"]
    assert r.dtype is flow.int64 and r.tolist() == [0, 0, 1]


def test_seed_004_Tensor_from_nested_lists(monkeypatch):
    made = []
    real = flow.Tensor.__class__.__call__

    def spy(cls, *a, **k):  # the sample discards its tensor: catch it on the way out
        t = real(cls, *a, **k)
        made.append(t)
        return t

    monkeypatch.setattr(type(flow.Tensor), "__call__", spy)
    run_seed("seed_004_tensor.py")
    (t,) = made
    assert t.dtype is flow.float32 and t.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]


def test_seed_004_pow_picks_a_signature_per_call():
    ns = run_seed("seed_004_pow.py")
    r = ns["r"].numpy()
    assert ns["r"].shape == (1, 10)
    np.testing.assert_allclose(flow.pow(ns["r"], 2).numpy(), r ** 2, rtol=1e-6)
    np.testing.assert_allclose(flow.pow(ns["r"], flow.ones(1, 10)).numpy(), r, rtol=1e-6)


def test_seed_004_relu_of_an_int_names_the_argument():
    with pytest.raises(TypeError, match=r"relu\(\): argument 'x' must be tensor, not int"):
        run_seed("seed_004_relu_int.py")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _by_hand(sample: str, world: int, env_extra: dict[str, str]) -> list[dict]:
    """``world`` processes started by hand with the five variables, as seed 003 does."""
    port = _free_port()
    procs = []
    try:
        for rank in range(world):
            env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                       WORLD_SIZE=str(world), RANK=str(rank), LOCAL_RANK=str(rank),
                       **env_extra)
            procs.append(subprocess.Popen(
                [sys.executable, str(RUNNER), str(SEEDS / sample)], env=env,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        outs = [p.communicate(timeout=90) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 0, err[-3000:]
    docs = [json.loads(line.split("SEED ", 1)[1]) for out, _ in outs
            for line in out.splitlines() if line.startswith("SEED ")]
    return sorted(docs, key=lambda d: d["rank"])


@pytest.fixture
def cluster_key(tmp_path):
    key = tmp_path / "run.key"
    r = subprocess.run([sys.executable, "-m", "actorflow.launcher.cli", "key", "new", str(key)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return str(key)


@pytest.mark.timeout(120)
def test_seed_003_three_processes_by_hand_make_a_global_tensor_from_data(cluster_key):
    docs = _by_hand("seed_003_global_tensor.py", 3, {"ACTORFLOW_CLUSTER_KEY": cluster_key})
    assert [d["rank"] for d in docs] == [0, 1, 2]
    for d in docs:  # every rank: the full meta and the logical tensor
        assert d["shape"] == [2, 3] and d["dtype"] == "float32"
        assert d["sbp"] == ["actorflow.sbp.split(dim=0)"]
        assert d["placement"] == 'actorflow.placement(type="cpu", ranks=[0, 1])'
        assert d["logical"] == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    assert docs[0]["local"] == [[1.0, 2.0, 3.0]] and docs[1]["local"] == [[4.0, 5.0, 6.0]]
    assert docs[2]["local_shape"] == [0, 0]  # outside the placement: meta, no data


@pytest.mark.timeout(120)
def test_seed_003_randn_draws_each_ranks_region(cluster_key):
    docs = _by_hand("seed_003_randn.py", 3, {"ACTORFLOW_CLUSTER_KEY": cluster_key})
    whole = np.array(docs[0]["logical"])
    assert whole.shape == (4, 5) and all(d["logical"] == docs[0]["logical"] for d in docs)
    np.testing.assert_array_equal(np.array(docs[0]["local"]), whole[:2])
    np.testing.assert_array_equal(np.array(docs[1]["local"]), whole[2:])
    assert docs[2]["local_shape"] == [0, 0]


@pytest.mark.timeout(60)
def test_a_rank_started_by_hand_without_a_key_fails_at_once_saying_how_to_make_one():
    env = {k: v for k, v in os.environ.items()
           if k not in ("ACTORFLOW_CLUSTER_KEY", "ACTORFLOW_INSECURE")}
    env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()), WORLD_SIZE="3",
               RANK="1", LOCAL_RANK="1")
    r = subprocess.run([sys.executable, str(RUNNER), str(SEEDS / "seed_003_global_tensor.py")],
                       env=env, capture_output=True, text=True, timeout=50)
    assert r.returncode != 0
    assert "rank 1 of 3 has no cluster key" in r.stderr, r.stderr[-2000:]
    assert "ACTORFLOW_CLUSTER_KEY=FILE" in r.stderr and "flowlaunch key new" in r.stderr
