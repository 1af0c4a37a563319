"""Plans that cannot hurt: malformed files, huge numbers and retyped tasks fail clearly.

Every case goes through the paths a user takes (``load_plan``, ``Plan.validate``,
``flowlaunch plan validate|show``) and checks the error names the field, task and limit.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tracemalloc

import msgpack
import numpy as np
import pytest

import actorflow as af
from actorflow.errors import PlanError, PlanLoadError, PlanValidationError
from actorflow.plan import Plan, load_plan, plan_to_json, save_plan
from actorflow.plan.limits import MAX_REGISTER_NUM
from actorflow.plan.memory import bytes_per_machine, check_fits
from actorflow.plan.model import SCHEMA_VERSION


def two_machine_plan() -> Plan:
    """input on machine 0 -> relu on machine 1 (through a comm_net) -> output."""
    b = af.PlanBuilder(machines=2, register_num=2, name="two")
    x = b.input("x", (4,), "float32")
    y = b.op("relu", x, machine=1, name="relu")
    b.output("y", y)
    return b.build()


def nested(depth: int) -> list:
    v: list = [1]
    for _ in range(depth):
        v = [v]
    return v


def write_doc(tmp_path, plan_doc, name="p.json"):
    p = tmp_path / name
    p.write_text(json.dumps({"format": "actorflow-plan", "version": SCHEMA_VERSION,
                             "plan": plan_doc}))
    return p


@pytest.mark.parametrize("mutate, msg", [
    (lambda d: d["tasks"][1]["produced"]["out"].update(register_num="3"),
     r"tasks\[1\]\.produced\['out'\]\.register_num: expected an integer, got str"),
    (lambda d: d["tasks"][1]["produced"]["out"].update(register_num=float("nan")),
     r"register_num: expected an integer, got float"),
    (lambda d: d["tasks"][0].update(parallel_ctx=[0]),
     r"tasks\[0\]\.parallel_ctx: expected a list of 2 integers, got 1"),
    (lambda d: d["tasks"][1]["exec_sequence"][0]["inputs"].update({"in": [1]}),
     r"tasks\[1\]\.exec_sequence\[0\]\.inputs\['in'\]: expected \[regst_desc_id, blob name\]"),
    (lambda d: d["tasks"][0].update(task_id=2**70),
     r"tasks\[0\]\.task_id: integer \d+ does not fit in 64 bits"),
    (lambda d: d["tasks"][0].update(attrs={"a": nested(40)}),
     r"tasks\[0\]\.attrs\.a.*nested deeper than 32 levels"),
    (lambda d: d.update(tasks={"0": {}}), r"plan\.tasks: expected a list, got dict"),
])
def test_malformed_fields_are_named(tmp_path, mutate, msg):
    doc = two_machine_plan().to_dict()
    mutate(doc)
    with pytest.raises(PlanLoadError, match=msg):
        load_plan(write_doc(tmp_path, doc))


def test_msgpack_with_foreign_types_is_a_load_error(tmp_path):
    for attrs, msg in [({"blob": b"\x00\x01"}, r"tasks\[0\]\.attrs\.blob: bytes is not plain data"),
                       ({3: "int key"}, r"tasks\[0\]\.attrs key: expected a string, got int")]:
        doc = two_machine_plan().to_dict()
        doc["tasks"][0]["attrs"] = attrs
        p = tmp_path / "p.plan"
        p.write_bytes(msgpack.packb({"format": "actorflow-plan", "version": SCHEMA_VERSION,
                                     "plan": doc}, use_bin_type=True))
        with pytest.raises(PlanLoadError, match=r"p\.plan: " + msg):
            load_plan(p)


def test_huge_numbers_are_refused_by_limit(tmp_path):
    for field, value, msg in [
        ("register_num", 10**9, rf"register_num 1000000000 is over the limit {MAX_REGISTER_NUM}"),
        ("acc_num", 10**9, r"attr 'acc_num' is 1000000000; expected an integer in \[1, "),
        ("repeat_num", 10**6, r"dry run that proves progress would deliver about \d+ messages"),
    ]:
        b = af.PlanBuilder(register_num=2, name="big")
        y = b.acc(b.repeat(b.input("x", (2,), "float32"), 2), 2)
        b.output("y", y)
        doc = b.build().to_dict()
        for t in doc["tasks"]:
            if field == "register_num":
                for d in t["produced"].values():
                    d["register_num"] = value
            elif field in t["attrs"]:
                t["attrs"][field] = value
        with pytest.raises(PlanValidationError, match=msg):
            load_plan(write_doc(tmp_path, doc))


def test_validation_memory_does_not_grow_with_register_num():
    """register_num at the limit costs the dry run what register_num 2 costs (clamped)."""
    peaks = []
    for rn in (2, MAX_REGISTER_NUM):
        b = af.PlanBuilder(register_num=rn, name="deep")
        h = b.input("x", (8,), "float32")
        for i in range(10):
            h = b.op("relu", h, name=f"r{i}")
        b.output("y", h)
        plan = b.build()
        tracemalloc.start()
        plan.validate()
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    # unclamped, 11 descs x 65536 slots of per-slot state is > 10 MB; clamped it is the same
    assert peaks[1] < 2 * peaks[0] + 200_000, peaks


@pytest.mark.parametrize("new_type", ["normal", "tick", "boxing"])
def test_retyped_comm_net_is_rejected(new_type):
    plan = two_machine_plan()
    comm = plan.tasks_by_type("comm_net")[0]
    comm.task_type = new_type
    with pytest.raises(PlanValidationError,
                       match=rf"task {comm.task_id} \({comm.label}\): reads regst desc \d+ "
                             rf"produced on machine 0; a {new_type} task reads only regsts of "
                             r"its own machine 1"):
        plan.validate()


def test_comm_net_on_its_own_machine_and_kernel_less_normal_are_rejected():
    plan = two_machine_plan()
    relu = plan.task(plan.tasks_by_type("comm_net")[0].produced["out"].consumer_task_ids[0])
    relu.exec_sequence.clear()
    with pytest.raises(PlanValidationError,
                       match=r"a normal task runs kernels, but its exec sequence is empty"):
        plan.validate()
    plan = two_machine_plan()
    plan.tasks_by_type("normal")[0].task_type = "comm_net"  # relu reads its own machine
    with pytest.raises(PlanValidationError, match=r"a comm_net task runs no kernels.*a comm_net "
                                                  r"task brings a regst from another machine"):
        plan.validate()


def test_unwritten_blob_and_bad_mem_case_are_rejected():
    plan = two_machine_plan()
    relu = plan.tasks_by_type("normal")[0]
    relu.produced["out"].blobs["extra"] = af.plan.BlobDesc((4,), "float32")
    out_task = plan.task(relu.produced["out"].consumer_task_ids[0])
    assert out_task.task_type == "output"
    with pytest.raises(PlanValidationError, match=r"no kernel writes blob 'extra'"):
        plan.validate()
    plan = two_machine_plan()
    plan.tasks[0].produced["out"].mem_case = "cuda:3"
    with pytest.raises(PlanValidationError, match=r"mem_case 'cuda:3' is not 'host' or "
                                                  r"'DEVICE:i' with i < devices_per_machine 1"):
        plan.validate()


def test_memory_per_machine_is_computed_shown_and_checked(tmp_path):
    b = af.PlanBuilder(machines=2, register_num=3, name="mem")
    x = b.input("x", (1000,), "float64")  # 8000 B per regst on machine 0
    y = b.op("relu", x, machine=1, name="relu")  # mirror (3 x 8000) + own desc on machine 1
    b.output("y", y)
    plan = b.build()
    need = bytes_per_machine(plan)
    descs = plan.regst_descs()
    own = {m: sum(d.register_num * d.nbytes() for t in plan.tasks if t.machine_id == m
                  for d in t.produced.values()) for m in (0, 1)}
    assert need[0] == own[0] == 3 * 8000
    assert need[1] == own[1] + 3 * 8000  # the comm_net's receive mirror of desc 0
    assert sum(d.register_num * d.nbytes() for d in descs.values()) == own[0] + own[1]
    path = save_plan(plan, tmp_path / "mem.plan")
    out = subprocess.run([sys.executable, "-m", "actorflow.launcher.cli", "plan", "show",
                          str(path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "regst memory" in out.stdout and "machine 0 23.4 KiB" in out.stdout
    with pytest.raises(PlanError, match=r"needs 23\.4 KiB of regst memory .* this machine has "
                                        r"1\.0 KiB available"):
        check_fits(need[0], "plan 'mem' on machine 0", available=1024)


def test_runtime_checks_memory_before_allocating():
    """A plan needing more than the machine has fails before any regst exists."""
    b = af.PlanBuilder(register_num=4, name="huge")
    x = b.input("x", (2**40,), "float64")  # 8 TiB per regst
    b.output("y", b.op("relu", x, name="relu"))
    plan = b.build()
    with pytest.raises(PlanError, match=r"plan 'huge' on machine\(s\) \[0\] of this process "
                                        r"needs 64\.0 TiB of regst memory"):
        af.Session(plan)


def test_flowlaunch_plan_validate_prints_one_line_not_a_traceback(tmp_path):
    doc = json.loads(plan_to_json(two_machine_plan()))
    doc["plan"]["tasks"][1]["exec_sequence"] = "oops"
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(doc))
    out = subprocess.run([sys.executable, "-m", "actorflow.launcher.cli", "plan", "validate",
                          str(p)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert "Traceback" not in out.stderr
    assert out.stderr.strip().count("\n") == 0
    assert "bad.json: tasks[1].exec_sequence: expected a list, got str" in out.stderr


def test_a_valid_plan_still_runs_after_loading(tmp_path):
    path = save_plan(two_machine_plan(), tmp_path / "ok.plan")
    with af.Session(load_plan(path)) as s:
        np.testing.assert_array_equal(s.run({"x": np.array([-1, 2, -3, 4], "float32")}),
                                      [0, 2, 0, 4])
