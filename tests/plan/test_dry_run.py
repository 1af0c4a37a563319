"""The dry run (``protocol.simulate``) at its edges: exactly how many deliveries it makes and
in which order, and the budget that bounds it (the estimate it refuses a plan by, to the
message, and the run that overruns it).  The Python reference alone runs dry runs, so these
live outside ``tests/protocol`` (whose tests run once per core)."""

from __future__ import annotations

import pytest

import actorflow as af
from actorflow.errors import PlanValidationError
from actorflow.protocol.simulate import check_progress, simulate
from tests.protocol.by_hand import make_task


def _chain(register_num: int = 2):
    b = af.PlanBuilder(register_num=register_num)
    b.output("y", b.op("relu", b.op("relu", b.input("x", (2,)))))
    return b.build()


def _inputs(plan) -> list[int]:
    return [t.task_id for t in plan.tasks if t.task_type == "input"]


def _actors(res) -> set[int]:
    return {a.task_id for a in res.acts}


def test_max_steps_is_exactly_the_number_of_deliveries():
    """The feed command is the first delivery (the input acts on it), the close the second."""
    plan = _chain()
    (inp,) = _inputs(plan)
    none = simulate(plan, pieces=3, max_steps=0)
    assert none.truncated and none.acts == [] and none.messages == 0
    one = simulate(plan, pieces=3, max_steps=1)
    # register_num 2: the input writes two pieces and waits for a free regst
    assert one.truncated and _actors(one) == {inp} and len(one.acts) == 2 and one.messages == 2


def test_the_dry_run_delivers_the_oldest_queue_first_unless_pick_says_otherwise():
    plan = _chain()
    (inp,) = _inputs(plan)
    # after the feed, the client's close (queued first) is older than the input's READYs
    oldest = simulate(plan, pieces=3, max_steps=2)
    assert _actors(oldest) == {inp}
    newest = simulate(plan, pieces=3, max_steps=2, pick=lambda n: n - 1)
    assert inp in _actors(newest) and len(_actors(newest)) == 2  # the first relu read a READY


def test_pick_counts_queues_from_the_oldest():
    """Three inputs, three client queues: pick 1 is the second oldest, not the newest."""
    b = af.PlanBuilder(register_num=2)
    x, y, z = (b.input(n, (2,)) for n in "xyz")
    b.output("s", b.op("add", b.op("add", x, y), z))
    plan = b.build()
    inputs = _inputs(plan)
    assert len(inputs) == 3
    res = simulate(plan, pieces=1, max_steps=1, pick=lambda n: 1)
    assert _actors(res) == {inputs[1]}


def test_the_dry_run_budget_is_a_base_plus_a_share_per_task_and_edge():
    """400,000 deliveries and 100 more per task and per producer->consumer edge; a plan whose
    dry run would need more is refused naming the budget and the task that costs most."""
    b = af.PlanBuilder(register_num=2, name="big")
    b.output("y", b.acc(b.repeat(b.input("x", (2,), "float32"), 2), 2))
    plan = b.build()
    rep = next(t for t in plan.tasks if t.task_type == "repeat")
    rep.attrs["repeat_num"] = 100_000
    edges = sum(len(d.consumer_task_ids) for t in plan.tasks for d in t.produced.values())
    budget = 400_000 + 100 * (len(plan.tasks) + edges)
    # acts: input 2e5 (2 x repeat_num pieces), repeat 2e10, acc 1e10 + 1, output 1e10 + 1;
    # each act costs 1 delivery, each READY 2 per consumer (READY + ACK), each EORD 1 more
    with pytest.raises(PlanValidationError, match=r"would deliver about 130000800005 messages"):
        check_progress(plan)
    with pytest.raises(PlanValidationError, match=rf"over its budget of {budget} for a plan of "
                       rf"this size: task {rep.task_id} \({rep.label}\) alone acts up to "
                       rf"{2 * 100_000 * 100_000} times for {2 * 100_000} pieces"):
        check_progress(plan)


@pytest.mark.parametrize("kind, key", [("acc", "acc_num"), ("repeat", "repeat_num")])
def test_the_dry_run_alone_refuses_a_rate_of_zero_with_the_protocol_s_words(kind, key):
    """Plan.validate's rules refuse it first; the dry run on its own must too (no
    ZeroDivisionError from its cost estimate)."""
    b = af.PlanBuilder(register_num=2, name="zero")
    b.output("y", b.acc(b.repeat(b.input("x", (2,), "float32"), 2), 2))
    plan = b.build()
    t = next(t for t in plan.tasks if t.task_type == kind)
    t.attrs[key] = 0
    with pytest.raises(PlanValidationError, match=rf"dry run of 4 pieces broke the protocol: "
                       rf"task {t.task_id} \({kind}\): needs {key} >= 1"):
        check_progress(plan)


def test_the_dry_run_estimate_follows_the_busiest_input_of_each_task():
    """add reads the input (2,000 pieces) and the repeat (2,000,000 regsts): it acts up to
    2,000,000 times, and so does its output."""
    b = af.PlanBuilder(register_num=2, name="two rates")
    x = b.input("x", (2,), "float32")
    r = b.repeat(x, 1000)
    b.output("y", b.acc(r, 2))
    b.output("z", b.op("add", x, r))
    plan = b.build(validate=False)  # validate() would refuse it for exactly this
    assert sorted(t.task_type for t in plan.tasks) == [
        "acc", "input", "normal", "output", "output", "repeat"]
    # acts x (1 + per produced desc 2 x consumers + 1): input 2e3 x 6, repeat 2e6 x 6,
    # acc (1e6 + 1) x 4, add 2e6 x 4, output y 1e6 + 1, output z 2e6
    with pytest.raises(PlanValidationError, match=r"would deliver about 27012005 messages, over "
                       r"its budget of 401200 "):
        check_progress(plan)


def _edge_plan(acc_num: int):
    """input -> 2 relus -> repeat 79 -> 7 relus -> acc -> output: 13 tasks, 12 edges, a budget
    of 402,500 deliveries; with acc_num 53 the estimate is exactly that (158 pieces: 158 x 4
    x 3 + 12,482 x 4 x 8 + 236 x 5), with 52 it is 25 more (241 acc acts instead of 236)."""
    b = af.PlanBuilder(register_num=2, name="edge")
    h = b.input("x", (2,), "float32")
    for _ in range(2):
        h = b.op("relu", h)
    h = b.repeat(h, 79)
    for _ in range(7):
        h = b.op("relu", h)
    b.output("y", b.acc(h, acc_num))
    return b.build(validate=False)


def test_a_dry_run_estimated_at_exactly_its_budget_runs():
    check_progress(_edge_plan(53))  # the estimate equals the budget: not over it
    with pytest.raises(PlanValidationError, match=r"about 402525 messages, over its budget of "
                                                  r"402500 "):
        check_progress(_edge_plan(52))


def _stuck_plan():
    """x (register_num 1) feeds add directly and through acc(2) -> repeat(2): x cannot run a
    piece ahead of add, so nothing drains; 4 relus after add make 9 actors stuck."""
    b = af.PlanBuilder(register_num=2)
    x = b.input("x", (3,), "float32", register_num=1)
    h = b.op("add", x, b.repeat(b.acc(x, 2, name="acc"), 2, name="rep"), name="join")
    for i in range(4):
        h = b.op("relu", h, name=f"r{i}")
    b.output("y", h)
    return b.build(validate=False)


def test_a_stuck_dry_run_names_six_of_its_stuck_actors_and_the_plan_s_source():
    with pytest.raises(PlanValidationError) as ei:
        check_progress(_stuck_plan())
    text = str(ei.value)
    assert text.startswith("plan cannot make progress with its register_nums: a dry run of 4 "
                           "pieces stops with 9 actors stuck: task 0 (x): ")
    assert text.count(" | ") == 5 and text.endswith("Raise register_num on the regst descs "
                                                    "named above.")
    with pytest.raises(PlanValidationError, match=r"^my\.plan: plan cannot make progress"):
        check_progress(_stuck_plan(), "my.plan")


def test_a_dry_run_that_overruns_its_budget_is_refused():
    """A plan with a cycle (the main job's back edge) has no estimate, so only the run itself
    can find it too long: here an input -> repeat(500) -> output beside the main job needs
    1,000 pieces x 500 regsts, far over 400,000 deliveries."""
    tasks = [
        make_task(0, "wait_and_send_ids", produced=[(1, 2, [1])], num_critical_sections=1),
        make_task(1, "reentrant_lock", produced=[(2, 2, [2])], consumed=[1, 5],
                  start_desc=1, end_desc=5, conflicts={"0": [0]}),
        make_task(2, "case", produced=[(3, 2, [3])], consumed=[2], cs_descs=[3]),
        make_task(3, "tick", produced=[(4, 2, [4, 5])], consumed=[3]),
        make_task(4, "esac", produced=[(5, 2, [1])], consumed=[4], cs_of_desc={4: 0}),
        make_task(5, "callback_tick", consumed=[4]),
        make_task(6, "input", produced=[(11, 2, [7])]),
        make_task(7, "repeat", produced=[(12, 2, [8])], consumed=[11], repeat_num=500),
        make_task(8, "output", consumed=[12]),
    ]

    class Plan:
        pass

    plan = Plan()
    plan.tasks = tasks
    budget = 400_000 + 100 * (9 + 8)  # 9 tasks, 8 producer -> consumer edges
    with pytest.raises(PlanValidationError, match=rf"^the dry run of 1000 pieces did not finish "
                                                  rf"within its budget of {budget} deliveries"):
        check_progress(plan)
