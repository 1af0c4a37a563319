"""Plan files: msgpack round trip, the JSON view, and clear errors for bad files."""

from __future__ import annotations

import json

import msgpack
import numpy as np
import pytest

import actorflow as af
from actorflow.errors import PlanLoadError, PlanValidationError
from actorflow.plan import Plan, load_plan, plan_from_bytes, plan_to_bytes, plan_to_json, save_plan
from actorflow.plan.model import SCHEMA_VERSION


def sample_plan(machines: int = 2) -> Plan:
    b = af.PlanBuilder(machines=machines, register_num=3, name="io")
    x = b.input("x", (2, 3), "float32")
    s = b.source("random_normal", {"shape": [2, 3], "seed": 5}, piece_num=4, thrd=4)
    y = b.op("add", x, s, machine=machines - 1)
    y = b.fused([("relu", {}), ("scalar_mul", {"scalar": 2.0})], y)
    y = b.acc(b.repeat(y, 2), 2, register_num=1)
    b.output("y", y)
    return b.build()


def test_msgpack_round_trip_keeps_every_field(tmp_path):
    plan = sample_plan()
    path = save_plan(plan, tmp_path / "p.plan")
    assert not (tmp_path / "p.plan.tmp").exists()
    back = load_plan(path)
    assert back.to_dict() == plan.to_dict()
    assert back == plan  # dataclass equality: tuples, BlobRefs, ParallelContext survive
    assert plan_from_bytes(plan_to_bytes(plan)) == plan
    comm = back.tasks_by_type("comm_net")
    assert comm and comm[0].machine_id == 1


def test_json_view_is_the_same_tree_and_loads(tmp_path):
    plan = sample_plan()
    text = plan_to_json(plan)
    doc = json.loads(text)
    assert doc["format"] == "actorflow-plan" and doc["version"] == SCHEMA_VERSION
    assert doc["plan"]["tasks"][0]["task_type"] == "input"
    assert '"op_type": "random_normal"' in text
    p = tmp_path / "p.json"
    p.write_text(text)
    assert load_plan(p) == plan


def test_loaded_plan_runs(tmp_path):
    b = af.PlanBuilder()
    b.output("y", b.op("scalar_add", b.input("x", (3,), "float64"), scalar=1.0))
    path = save_plan(b.build(), tmp_path / "chain.plan")
    with af.Session(load_plan(path)) as s:
        np.testing.assert_array_equal(s.run({"x": np.arange(3.0)}), [1.0, 2.0, 3.0])


def test_corrupt_file_names_the_file(tmp_path):
    p = tmp_path / "bad.plan"
    p.write_bytes(b"\xc1\xc1 this is not msgpack")
    with pytest.raises(PlanLoadError, match=r"bad\.plan: not a plan file \(msgpack decode"):
        load_plan(p)


def test_truncated_file_names_the_file(tmp_path):
    data = plan_to_bytes(sample_plan())
    p = tmp_path / "cut.plan"
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(PlanLoadError, match=r"cut\.plan: not a plan file") as e:
        load_plan(p)
    assert e.value.__cause__ is not None


def test_unknown_schema_version_names_both_versions(tmp_path):
    doc = {"format": "actorflow-plan", "version": 99, "plan": sample_plan().to_dict()}
    p = tmp_path / "future.plan"
    p.write_bytes(msgpack.packb(doc))
    with pytest.raises(PlanLoadError, match=rf"future\.plan: plan schema version 99 is not "
                                            rf"supported \(this actorflow reads version "
                                            rf"{SCHEMA_VERSION}\)"):
        load_plan(p)


def test_other_msgpack_document_is_not_a_plan(tmp_path):
    p = tmp_path / "other.plan"
    p.write_bytes(msgpack.packb({"hello": 1}))
    with pytest.raises(PlanLoadError, match=r"other\.plan: not an actorflow plan \(expected a "
                                            r"map with format 'actorflow-plan'\)"):
        load_plan(p)


def test_corrupt_structure_names_the_problem(tmp_path):
    doc = {"format": "actorflow-plan", "version": SCHEMA_VERSION,
           "plan": {"tasks": [{"task_id": 0}]}}
    p = tmp_path / "half.plan"
    p.write_bytes(msgpack.packb(doc))
    with pytest.raises(PlanLoadError, match=r"half\.plan: tasks\[0\]: missing field 'task_type'"):
        load_plan(p)


def test_missing_file_and_bad_json(tmp_path):
    with pytest.raises(PlanLoadError, match=r"nope\.plan: cannot read plan file"):
        load_plan(tmp_path / "nope.plan")
    p = tmp_path / "bad.json"
    p.write_text("{not json")
    with pytest.raises(PlanLoadError, match=r"bad\.json: not valid JSON"):
        load_plan(p)


def test_load_validates_and_names_the_file(tmp_path):
    plan = sample_plan()
    plan.tasks[-1].consumed["in"] = [99]
    p = save_plan(plan, tmp_path / "dangling.plan")
    with pytest.raises(PlanValidationError, match=r"dangling\.plan: .*regst desc 99, which no "
                                                  r"task produces \(dangling id\)"):
        load_plan(p)
    assert load_plan(p, validate=False).tasks[-1].consumed["in"] == [99]


def test_no_pickle_in_the_file(tmp_path):
    data = (save_plan(sample_plan(), tmp_path / "p.plan")).read_bytes()
    assert not data.startswith(b"\x80")  # pickle protocol marker
    assert isinstance(msgpack.unpackb(data, strict_map_key=False), dict)
