"""Placement and SBP objects: cached, hashable, mapped onto the cluster, with clear errors."""

from __future__ import annotations

import pickle

import pytest

import actorflow as af
from actorflow.frontend.sbp import from_code


def test_equal_placements_are_the_same_cached_object():
    a = af.placement("cpu", ranks=[0, 1])
    b = af.placement("cpu", ranks=(0, 1))
    assert a is b and hash(a) == hash(b)
    assert af.placement("cpu", ranks=[1, 0]) is not a  # rank order is device order
    assert af.placement("cuda", ranks=[0, 1]) is not a
    assert af.placement("cpu", ranks=["cpu:0", "cpu:1"]) is a
    assert af.placement("cpu", 3) is af.placement("cpu", ranks=[3])
    assert {a: 1}[af.placement("cpu", ranks=[0, 1])] == 1


def test_ranks_map_to_machine_and_device():
    p = af.placement("cuda", ranks=[0, 1, 2, 3, 5])
    assert p.devices(2) == [(0, 0), (0, 1), (1, 0), (1, 1), (2, 1)]
    assert p.devices(1) == [(0, 0), (1, 0), (2, 0), (3, 0), (5, 0)]
    assert p.parallel_num == 5 and p.device_type == "cuda"


@pytest.mark.parametrize("kwargs, exc, message", [
    ({"ranks": []}, ValueError, "ranks must not be empty"),
    ({"device_type": "tpu", "ranks": [0]}, ValueError, "unknown device type 'tpu'"),
    ({"ranks": ["cpu:0", "cuda:1"]}, ValueError, r"mixed device types \['cpu', 'cuda'\]"),
    ({"device_type": "cuda", "ranks": [0, "cpu:1"]}, ValueError, "mixed device types"),
    ({"ranks": [0, 0]}, ValueError, r"ranks \[0, 0\] repeat a rank"),
    ({"ranks": [-1]}, ValueError, "ranks must be >= 0"),
    ({"ranks": [1.5]}, TypeError, "ranks must be ints, got float"),
])
def test_placement_errors(kwargs, exc, message):
    with pytest.raises(exc, match=message):
        af.placement(**kwargs)


def test_sbp_objects_are_cached_and_hashable():
    assert af.sbp.split(0) is af.sbp.split(0)
    assert af.sbp.split(1) is not af.sbp.split(0)
    assert len({af.sbp.split(0), af.sbp.split(0), af.sbp.broadcast, af.sbp.partial_sum}) == 3
    assert af.sbp.split(2).code == "S2" and af.sbp.broadcast.code == "B"
    assert af.sbp.partial_sum.code == "P"
    assert from_code("S2") is af.sbp.split(2) and from_code("P") is af.sbp.partial_sum
    assert repr(af.sbp.split(1)) == "actorflow.sbp.split(dim=1)"  # as OneFlow's
    with pytest.raises(AttributeError):
        af.sbp.split(0).axis = 3


def test_sbp_and_placement_refuse_pickle():
    with pytest.raises(TypeError):
        pickle.dumps(af.sbp.split(0))
    with pytest.raises(TypeError):
        pickle.dumps(af.placement("cpu", ranks=[0]))


@pytest.mark.parametrize("axis, exc, message", [
    (-1, ValueError, "axis must be >= 0, got -1"),
    ("0", TypeError, "axis must be an int, not str"),
    (True, TypeError, "axis must be an int, not bool"),
])
def test_bad_split_axes(axis, exc, message):
    with pytest.raises(exc, match=message):
        af.sbp.split(axis)


def test_split_axis_beyond_rank_is_rejected_when_used():
    with af.Job("axes"), pytest.raises(
            ValueError, match=r"cannot use actorflow.sbp.split\(dim=2\) on a tensor of rank 2"):
        af.input("x", (4, 4), placement=af.placement("cpu", ranks=[0, 1]), sbp=af.sbp.split(2))
    with af.Job("axes2"):
        x = af.input("x", (4, 4))
        with pytest.raises(ValueError, match="rank 2"):
            x.to_global(sbp=af.sbp.split(5))
    with pytest.raises(ValueError, match="unknown SBP code"):
        from_code("X1")


def test_partial_sum_only_comes_from_ops():
    p2 = af.placement("cpu", ranks=[0, 1])
    with af.Job("p"):
        with pytest.raises(ValueError, match="a variable holds whole values"):
            af.variable("w", (2, 2), placement=p2, sbp=af.sbp.partial_sum)
        with pytest.raises(ValueError, match="an input holds whole values"):
            af.input("x", (2, 2), placement=p2, sbp=af.sbp.partial_sum)
        x = af.input("y", (2, 2), placement=p2)
        with pytest.raises(ValueError, match="cannot be boxed into partial_sum"):
            x.to_global(sbp=af.sbp.partial_sum)


def test_api_errors_are_in_the_actorflow_hierarchy():
    from actorflow.errors import ActorflowError, ArgumentTypeError, UsageError

    with pytest.raises(UsageError) as e:
        af.placement("cpu", ranks=[])
    assert isinstance(e.value, (ActorflowError, ValueError))
    with pytest.raises(ArgumentTypeError) as e:
        af.sbp.split("1")
    assert isinstance(e.value, (ActorflowError, TypeError))
    with pytest.raises(ArgumentTypeError):
        af.functional.relu(1)
