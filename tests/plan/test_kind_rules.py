"""One record per task kind: its structural rule rejects a task retyped by hand.

Each test takes a valid plan, changes one task the way a hand-edited or hostile plan file
could, and checks that ``Plan.validate`` names the task and what its kind must look like.
"""

from __future__ import annotations

import pytest

import actorflow as af
import actorflow.functional as F
from actorflow.errors import PlanValidationError, RegistryError
from actorflow.plan import Plan
from actorflow.plan.describe import show, to_dot
from actorflow.protocol.kinds import KINDS, Kind, get_kind, register_kind
from actorflow.protocol.state import ActorState


def two_machines() -> Plan:
    """input x (m0) -> relu (m0) -> [comm_net on m1] -> scale (m1) -> output y (m1)."""
    b = af.PlanBuilder(machines=2)
    h = b.op("relu", b.input("x", (4,)), name="relu")
    b.output("y", b.op("scalar_mul", h, scalar=2.0, machine=1, name="scale"), machine=1)
    return b.build()


def task_of(plan: Plan, task_type: str) -> int:
    return plan.tasks_by_type(task_type)[0].task_id


def bad(plan: Plan, msg: str) -> None:
    with pytest.raises(PlanValidationError, match=msg):
        plan.validate()


def test_the_valid_plans_pass():
    two_machines().validate()
    P2 = af.placement("cpu", ranks=[0, 1])
    with af.Job("box", pieces=2) as job:
        x = af.random_input("x", (4, 2), seed=1, placement=P2, sbp=af.sbp.split(0))
        af.output("y", F.relu(x))
    plan = af.compile(job, machines=2)  # validates: sources, boxing, comm_net, outputs
    assert {t.task_type for t in plan.tasks} >= {"source", "boxing", "comm_net", "output"}


def test_a_kernel_task_retyped_comm_net_is_rejected():
    p = two_machines()
    relu = p.task(1)
    relu.task_type = "comm_net"
    bad(p, r"task 1 \(relu\): a comm_net task runs no kernels, but its exec sequence has 1")
    relu.exec_sequence.clear()
    bad(p, r"task 1 \(relu\): .*a comm_net task brings a regst from another machine, but regst "
           r"desc 0 is produced on its own machine 0")


def test_a_comm_net_retyped_normal_may_not_read_another_machine():
    p = two_machines()
    cn = task_of(p, "comm_net")
    p.task(cn).task_type = "normal"
    bad(p, rf"task {cn} \(comm_net1->m1\): a normal task runs kernels, but its exec sequence "
           rf"is empty; task {cn} \(comm_net1->m1\): reads regst desc 1 produced on machine 0; "
           r"a normal task reads only regsts of its own machine 1")


def test_acc_and_output_with_kernels_are_rejected():
    p = two_machines()
    scale = p.task(2)
    scale.task_type = "acc"
    scale.attrs["acc_num"] = 2
    bad(p, r"task 2 \(scale\): an acc task runs no kernels, but its exec sequence has 1 \(its "
           r"executor would never run them\)")
    p = two_machines()
    out = task_of(p, "output")
    p.task(out).exec_sequence.append(p.task(1).exec_sequence[0])
    bad(p, rf"task {out} \(y\): an output task runs no kernels")


def test_source_needs_a_generator_kernel_and_no_data_input():
    p = two_machines()
    p.task(0).task_type = "source"  # the input task: no kernels
    bad(p, r"task 0 \(x\): a source task runs kernels, but its exec sequence is empty")
    p = two_machines()
    p.task(1).task_type = "source"  # relu: a kernel, but it reads data
    bad(p, r"task 1 \(relu\): a source task consumes only control regsts, but regst descs \[0\] "
           "carry data")


def test_boxing_needs_kernels_inputs_and_outputs():
    p = two_machines()
    cn = task_of(p, "comm_net")
    p.task(cn).task_type = "boxing"
    bad(p, rf"task {cn} \(comm_net1->m1\): a boxing task runs kernels, but its exec sequence is "
           "empty")


def test_tick_runs_no_kernels():
    p = two_machines()
    p.task(1).task_type = "tick"
    bad(p, r"task 1 \(relu\): a tick task runs no kernels")


def test_copy_tasks_go_the_direction_their_name_says():
    with af.Job("dev", pieces=1) as job:
        x = af.random_input("x", (4,), seed=1, placement=af.placement("cuda", ranks=[0]))
        af.output("y", F.relu(x))
    plan = af.compile(job, machines=1)
    h2d = task_of(plan, "copy_h2d")
    plan.task(h2d).task_type = "copy_d2h"
    bad(plan, rf"task {h2d} \(.*\): a copy_d2h task copies device to host memory, but it reads "
              "'host' and writes 'cuda:0'")


def test_unknown_kind_lists_the_known_ones_and_kinds_register_once():
    p = two_machines()
    p.task(1).task_type = "warp"
    bad(p, r"unknown task type 'warp' \(known: acc, boxing, callback_tick, case, comm_net, "
           "copy_d2h, copy_h2d, esac, input, normal, output, reentrant_lock, repeat, source, "
           "tick, wait_and_send_ids\\)")
    with pytest.raises(RegistryError, match="task type 'normal' is registered twice"):
        register_kind(Kind("normal", ActorState, lambda t, s: [], "again"))
    assert get_kind("normal").description == "runs its exec sequence of kernels on every piece"


def test_plan_show_and_dot_read_the_kind_records():
    p = two_machines()
    text = show(p)
    for name in ("input", "normal", "comm_net", "output"):
        assert f"  {name}: {KINDS.get(name).description}" in text
    assert "  acc:" not in text  # only the kinds the plan uses
    cn = task_of(p, "comm_net")
    assert f"t{cn} [label=" in to_dot(p) and "shape=cds" in to_dot(p)


def test_flowlaunch_plan_validate_rejects_a_retyped_task_in_a_plan_file(tmp_path, capsys):
    """The user's path: a hand-edited plan file, checked by ``flowlaunch plan validate``."""
    import json

    from actorflow.launcher.cli import main
    from actorflow.plan.io import plan_to_json

    p = two_machines()
    path = tmp_path / "job.json"
    path.write_text(plan_to_json(p))
    assert main(["plan", "validate", str(path)]) == 0
    doc = json.loads(path.read_text())
    cn = task_of(p, "comm_net")
    doc["plan"]["tasks"][cn]["task_type"] = "boxing"  # a relay with no kernels, called boxing
    path.write_text(json.dumps(doc))
    assert main(["plan", "validate", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("flowlaunch: error: ")
    assert f"task {cn} (comm_net1->m1): a boxing task runs kernels, but its exec sequence is " \
           "empty" in err
    assert "a boxing task reads only regsts of its own machine 1" in err
