"""``Plan.validate``: every rule of a valid plan (docs/architecture.md, "From a job to running
actors", step 2), each error naming the task and regst desc."""

from __future__ import annotations

import pytest

import actorflow as af
from actorflow.errors import PlanValidationError
from actorflow.plan import BlobDesc, Plan


def chain(register_num: int = 2) -> Plan:
    """input x (task 0, desc 0) -> relu (task 1, desc 1) -> scalar_mul (task 2, desc 2) -> y."""
    b = af.PlanBuilder(register_num=register_num)
    x = b.input("x", (4,), "float32")
    h = b.op("relu", x, name="relu")
    b.output("y", b.op("scalar_mul", h, scalar=2.0, name="scale"))
    return b.build()


def bad(plan: Plan, msg: str) -> None:
    with pytest.raises(PlanValidationError, match=msg):
        plan.validate()


def test_valid_plan_passes_and_returns_itself():
    p = chain()
    assert p.validate() is p


def test_dangling_regst_id():
    p = chain()
    p.task(2).consumed["in"] = [42]
    bad(p, r"task 2 \(scale\): consumed 'in' names regst desc 42, which no task produces "
           r"\(dangling id\)")


def test_consumer_listed_but_not_consuming():
    p = chain()
    p.task(0).produced["out"].consumer_task_ids.append(2)
    bad(p, r"task 0 \(x\), regst desc 0: lists consumer task 2, which does not consume it")


def test_consuming_without_being_listed():
    p = chain()
    p.task(1).produced["out"].consumer_task_ids.remove(2)
    bad(p, r"task 2 \(scale\): consumes regst desc 1, whose consumer list \[\] does not "
           r"include it")


def test_consumer_that_does_not_exist():
    p = chain()
    p.task(1).produced["out"].consumer_task_ids.append(77)
    bad(p, r"task 1 \(relu\), regst desc 1: consumer task 77 does not exist")


def test_machine_out_of_range():
    p = chain()
    p.task(1).machine_id = 3
    bad(p, r"task 1 \(relu\): machine_id 3 out of range \[0, 1\)")


def test_thread_out_of_range():
    p = chain()
    p.task(2).thrd_id = -1
    bad(p, r"task 2 \(scale\): thrd_id -1 is negative")


def test_unknown_op_type():
    p = chain()
    p.task(1).exec_sequence[0].kernel.op_type = "conv9d"
    bad(p, r"task 1 \(relu\), op 'relu': unknown op type 'conv9d'")


def test_unknown_task_type():
    p = chain()
    p.task(1).task_type = "warp"
    bad(p, r"task 1 \(relu\): unknown task type 'warp' \(known: acc, boxing, callback_tick, "
           r"case, comm_net")


def test_shape_mismatch_between_producer_and_kernel():
    p = chain()
    p.task(2).produced["out"].blobs["out"] = BlobDesc((5,), "float32")
    bad(p, r"task 2 \(scale\), op 'scale': output 'out' is \(4,\) float32 but regst desc 2 "
           r"blob 'out' is \(5,\) float32")


def test_dtype_mismatch_between_producer_and_kernel():
    p = chain()
    p.task(0).produced["out"].blobs["out"] = BlobDesc((4,), "float64")  # x is now float64
    bad(p, r"task 1 \(relu\), op 'relu': output 'out' is \(4,\) float64 but regst desc 1 blob "
           r"'out' is \(4,\) float32")


def test_kernel_reading_a_blob_the_desc_lacks():
    p = chain()
    node = p.task(2).exec_sequence[0]
    node.inputs["in"] = type(node.inputs["in"])(1, "missing")
    bad(p, r"task 2 \(scale\), op 'scale': input 'in' reads blob 'missing' missing from regst "
           r"desc 1")


def test_register_num_below_one():
    p = chain()
    p.task(1).produced["out"].register_num = 0
    bad(p, r"task 1 \(relu\), regst desc 1: register_num 0 < 1")


def test_duplicate_ids():
    p = chain()
    p.task(2).task_id = 1
    bad(p, "task id 1 is used twice")


def test_directed_cycle_names_the_tasks():
    p = chain()
    # relu (1) also consumes scale's output (2) -> 1 -> 2 -> 1
    p.task(1).consumed["back"] = [2]
    p.task(2).produced["out"].consumer_task_ids.append(1)
    bad(p, r"tasks form a cycle that can never make progress .*: 1 -> 2 -> 1")


def fan_in_through_acc(x_register_num: int) -> Plan:
    """x feeds add directly and through acc(2) -> repeat(2): add needs x piece 0 and the
    group of pieces 0 and 1, so x must be able to run one piece ahead of add."""
    b = af.PlanBuilder(register_num=2)
    x = b.input("x", (3,), "float32", register_num=x_register_num)
    z = b.repeat(b.acc(x, 2, name="acc"), 2, name="rep")
    b.output("y", b.op("add", x, z, name="join"))
    return b.build(validate=False)


def test_acc_fan_in_that_cannot_progress_is_rejected_by_the_dry_run():
    msg = (r"plan cannot make progress with its register_nums: a dry run of 4 pieces stops "
           r"with \d+ actors stuck: task 0 \(x\): regst desc 0 has no free regst \(held by "
           r"tasks \[3\]\).*Raise register_num")
    bad(fan_in_through_acc(1), msg)
    fan_in_through_acc(2).validate()  # one more regst lets it drain


def test_piece_count_mismatch_in_a_fan_in_is_rejected():
    b = af.PlanBuilder(register_num=4)
    x = b.input("x", (3,), "float32")
    b.output("y", b.op("add", x, b.acc(x, 2), name="join"))
    with pytest.raises(PlanValidationError, match=r"dry run of 4 pieces broke the protocol: "
                                                  r"task \d+ \(join\): every input ended"):
        b.build()


def test_kind_rules():
    p = chain()
    p.task(3).consumed["extra"] = [0]
    p.task(0).produced["out"].consumer_task_ids.append(3)
    bad(p, r"task 3 \(y\): an output task consumes exactly one regst desc and produces none")
    b = af.PlanBuilder()
    b.output("y", b.acc(b.input("x", (2,)), 2))
    p = b.build()
    p.tasks[1].attrs["acc_num"] = 0
    bad(p, r"task 1 \(acc1\): attr 'acc_num' must be an integer >= 1, got 0")


def test_several_problems_are_reported_together():
    p = chain()
    p.task(1).machine_id = 5
    p.task(2).thrd_id = -2
    with pytest.raises(PlanValidationError) as e:
        p.validate()
    assert "machine_id 5" in str(e.value) and "thrd_id -2" in str(e.value)


def test_blob_shape_and_dtype_the_allocator_cannot_make():
    p = chain()
    p.task(0).produced["out"].blobs["out"] = BlobDesc((-1,), "float32")
    bad(p, r"task 0 \(x\), regst desc 0: blob 'out' has shape \(-1,\); expected non-negative")
    p = chain()
    p.task(0).produced["out"].blobs["out"] = BlobDesc((4,), "float99")
    bad(p, r"task 0 \(x\), regst desc 0: blob 'out' has unknown dtype 'float99'")
