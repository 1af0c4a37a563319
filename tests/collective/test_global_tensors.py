"""Eager global tensors between real processes: one ``flowlaunch --nproc-per-node 4`` run
whose ranks each run a derandomized hypothesis oracle (random shapes, placements of 1-4
ranks, SBPs and op sequences give the numpy result on every rank), every boxing pair with
uneven splits, randn/ones by region, and the consistency check naming ranks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parent / "scripts" / "global_oracle.py"


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
        assert "rank 1" in d["caught_data"] and "differ" in d["caught_data"], d["caught_data"]


# -- one process (rank 0 of 1): meta, errors, and the comm stream's place in the VM --------
def test_one_rank_global_tensor_meta_ops_and_comm_instructions():
    import numpy as np

    import actorflow as af
    from actorflow import eager

    eager.shutdown()
    p = af.placement("cpu", ranks=[0])
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = af.tensor(a).to_global(p, af.sbp.split(1))
    assert (x.shape, x.dtype, x.placement, x.sbp) == ((3, 4), "float32", p, (af.sbp.split(1),))
    y = (x.relu() * 2.0).to_global(sbp=af.sbp.partial_sum)
    z = y @ af.ones(4, 2, placement=p, sbp=af.sbp.broadcast)  # matmul(P, B) -> P
    assert z.sbp == (af.sbp.partial_sum,)  # a tuple, as OneFlow's
    np.testing.assert_allclose(z.numpy(), (a * 2) @ np.ones((4, 2)))
    np.testing.assert_array_equal(x.to_local().numpy(), a)
    f = af.full((2, 3), 1.5, placement=p, sbp=af.sbp.split(0))
    np.testing.assert_array_equal((f - 0.5).numpy(), np.ones((2, 3), np.float32))
    del f
    vm = eager.get_vm()
    assert vm.streams[("cpu.comm", 0)].executed == 4  # the check, S1->P, P->B for 2 numpy()s
    del x, y, z
    af.sync()
    assert af.counters()["live_blobs"] == 0  # comm outputs are released like any blob
    problems = eager.shutdown()
    assert not problems, problems


def test_one_rank_bad_global_input_is_named():
    import numpy as np

    import actorflow as af
    from actorflow import eager
    from actorflow.errors import UsageError

    p = af.placement("cpu", ranks=[0])
    t = af.tensor(np.ones((2, 2), np.float32))
    with pytest.raises(UsageError, match=r"needs both placement= and sbp="):
        t.to_global(p)
    with pytest.raises(UsageError, match=r"placement ranks \[3\] do not exist in a world of 1"):
        t.to_global(af.placement("cpu", ranks=[0, 3]), af.sbp.broadcast)
    with pytest.raises(UsageError, match=r"does not fit a local tensor of shape \(2, 2\)"):
        t.to_global(p, af.sbp.split(2))
    with pytest.raises(UsageError, match=r"ranks \[2\] do not exist"):
        af.zeros(2, placement=af.placement("cpu", ranks=[2]), sbp=af.sbp.broadcast)
    g = t.to_global(p, af.sbp.broadcast)
    with pytest.raises(UsageError, match=r"mixes eager.global and eager.local tensors"):
        g + t
    del g, t
    assert not eager.shutdown()


def test_randn_by_region_equals_the_whole_tensor_sliced():
    import numpy as np

    from actorflow.frontend.global_tensor import normal_region

    whole = normal_region([6, 5], (slice(0, 6), slice(0, 5)), 7)
    np.testing.assert_array_equal(normal_region([6, 5], (slice(2, 4), slice(1, 5)), 7),
                                  whole[2:4, 1:5])
    assert abs(whole.mean()) < 0.6 and 0.5 < whole.std() < 1.5
    assert not np.array_equal(whole, normal_region([6, 5], (slice(0, 6), slice(0, 5)), 8))
    big = normal_region([200, 100], (slice(0, 200), slice(0, 100)), 1)
    assert abs(big.mean()) < 0.02 and abs(big.std() - 1) < 0.02  # 20,000 draws


@pytest.mark.timeout(90)
def test_cuda_placement_puts_each_local_part_on_cuda_local_rank(flowlaunch, cuda_device):
    script = Path(__file__).parent / "scripts" / "global_cuda.py"
    r = flowlaunch.run("--nproc-per-node", "2", "--master-port", "0", str(script), timeout=80)
    assert r.returncode == 0, r.stderr[-3000:]
    assert sorted(line.split("CUDA ", 1)[1] for line in r.stdout.splitlines()
                  if "CUDA " in line) == ["0 cuda:0 ok", "1 cuda:1 ok"], r.stdout
