"""Eager autograd on global tensors: gradients carry placement and SBP (a broadcast weight
read by split activations gets a partial-sum gradient; the optimizer's update boxes it),
in one process and between two real processes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import actorflow as af

SCRIPT = Path(__file__).parent / "scripts" / "global_train.py"


def test_one_rank_gradients_keep_placement_and_sbp():
    p = af.placement("cpu", ranks=[0])
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = af.tensor(a).to_global(p, af.sbp.split(0)).requires_grad_()
    y = (x * x).sum()
    y.backward()
    assert x.grad.placement == p and x.grad.shape == (2, 3)
    np.testing.assert_allclose(x.grad.numpy(), 2 * a)
    z = af.tensor(a).to_global(p, af.sbp.broadcast).requires_grad_()
    (z.to_global(sbp=af.sbp.split(1)) * 3.0).sum().backward()  # to_global's rule: back
    np.testing.assert_allclose(z.grad.numpy(), np.full((2, 3), 3.0))


@pytest.mark.timeout(120)
def test_two_ranks_data_parallel_gradients_are_partial_sums(flowlaunch):
    r = flowlaunch.run("--nproc-per-node", "2", "--master-port", "0", str(SCRIPT), timeout=100)
    assert r.returncode == 0, r.stderr[-3000:]
    docs = [json.loads(line.split("GRAD ", 1)[1]) for line in r.stdout.splitlines()
            if "GRAD " in line]
    assert sorted(d["rank"] for d in docs) == [0, 1]
    for d in docs:
        assert "partial_sum" in d["grad_sbp"], d
        assert d["grad_err"] < 1e-4 and d["loss_err"] < 1e-3, d
        assert d["w_err"] < 1e-5 and "broadcast" in d["w_sbp"], d
