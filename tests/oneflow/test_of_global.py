"""Global tensors on two ranks against OneFlow 0.9.0's values (issue 21, items 2, 3, 5):
broadcast from local data, uneven splits, S0<->S1, partial_sum from data, the data
consistency check (NaN and inf pass, a lying rank is refused on every rank), OneFlow's error
kinds, af.comm.  One ``flowlaunch --nproc-per-node 2`` run; the script prints, this checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parent / "scripts" / "global_two_ranks.py"


@pytest.fixture(scope="module")
def ranks():
    from tests.launcher.helpers import Launcher

    launcher = Launcher()
    try:
        r = launcher.run("--nproc-per-node", "2", "--master-port", "0", str(SCRIPT), timeout=100)
    finally:
        left = launcher.cleanup()
    assert not left, left
    assert r.returncode == 0, r.stderr[-3000:]
    docs = [json.loads(line.split("TWO ", 1)[1]) for line in r.stdout.splitlines()
            if "TWO " in line]
    return sorted(docs, key=lambda d: d["rank"])


A0 = [[4, 6, 5, 20], [6, 2, 5, 7], [3, 7, 5, 4], [6, 8, 9, 4]]
A1 = [[2, 10, 10, 7], [3, 9, 10, 5], [4, 6, 6, 9], [6, 8, 6, 4]]


@pytest.mark.timeout(120)
def test_layouts_have_oneflows_values(ranks):
    r0, r1 = ranks
    assert r0["b_local"] == r1["b_local"] == [[4, 6, 5, 20, 8, 9]]  # the first rank's data
    assert (r0["b_to_s1_local"], r1["b_to_s1_local"]) == ([[4, 6, 5]], [[20, 8, 9]])
    assert (r0["s0_25_local_shape"], r1["s0_25_local_shape"]) == ([13, 2], [12, 2])
    assert (r0["s0_13_local"], r1["s0_13_local"]) == (list(range(7)), list(range(7, 13)))
    assert r0["from_parts_shape"] == r1["from_parts_shape"] == [5, 2]  # 3 + 2 rows accepted
    assert r0["s0_to_s1_local"] == [row[:2] for row in A0 + A1]
    assert r1["s0_to_s1_local"] == [row[2:] for row in A0 + A1]
    assert (r0["s1_to_s0_local"], r1["s1_to_s0_local"]) == (A0, A1)
    assert r0["p_local"] == [[1, 2], [3, 4]] and r1["p_local"] == [[0, 0], [0, 0]]
    assert r0["p_logical"] == r1["p_logical"] == [[1, 2], [3, 4]]
    assert r0["all"] == r1["all"] == 'actorflow.placement(type="cpu", ranks=[0, 1])'


@pytest.mark.timeout(120)
def test_identical_data_with_nan_and_inf_is_accepted(ranks):
    r0, r1 = ranks
    assert r0["nan_error"] is None, r0["nan_error"]
    assert r0["nan_local"] == r1["nan_local"] == ["nan", "1.0", "inf"]


@pytest.mark.timeout(120)
def test_the_data_consistency_check(ranks):
    r0, r1 = ranks
    for key in ("lie_b", "lie_s"):
        assert r0[key] == r1[key], key  # the same error on every rank
        name, mro, msg = r0[key]
        assert name == "ConsistencyError" and "RuntimeError" in mro
        assert "Each rank must have same input sequence or numpy array" in msg
        assert "rank 0" in msg and "rank 1" in msg and "differ" in msg
    assert r0["unchecked_local"] == [[1.0, 2.0]] and r1["unchecked_local"] == [[3.0, 5.0]]


@pytest.mark.timeout(120)
def test_errors_are_oneflows_kinds(ranks):
    r0 = ranks[0]
    for key, words in (("bad_parts", "rank 0's local part has shape (2, 4)"),
                       ("two_placements", "Expected all tensors to be on the same placement"),
                       ("placement_differs", "placement")):
        for d in ranks:
            assert d[key] is not None and "RuntimeError" in d[key][1], (key, d[key])
        assert words in r0[key][2], (key, r0[key])
    for d in ranks:  # both ranks fail, each naming both (as seen from its side)
        msg = d["placement_differs"][2]
        assert "rank 0" in msg and "rank 1" in msg and "ranks=[0, 1]" in msg, msg


@pytest.mark.timeout(120)
def test_comm_on_two_ranks(ranks):
    for d in ranks:
        assert d["all_reduce"] == [3.0, 4.0]
        assert d["all_gather"] == [[0, 0], [1, 1]]
        assert d["broadcast"] == [20.0]
