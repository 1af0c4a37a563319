"""Several jobs in one plan: job ids, shared variables, the main job's shape, validation."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import actorflow as af
from actorflow.errors import CompileError, PlanValidationError, UsageError
from actorflow.plan.io import load_plan, save_plan


def _jobs(ranks=(0, 1), sbp=None):
    P = af.placement("cpu", ranks=list(ranks))
    sbp = sbp or af.sbp.split(0)
    with af.Job("update") as up:
        x = af.input("x", (4, 2), placement=P, sbp=sbp)
        w = af.variable("w", (4, 2), placement=P, sbp=sbp)
        af.output("w", w.add_(x))
    with af.Job("eval") as ev:
        w = af.variable("w", (4, 2), placement=P, sbp=sbp)
        af.output("y", (w * 2.0).sum())
    with af.Job("other") as ot:  # touches no variable
        z = af.input("z", (3,))
        af.output("z2", z + 1.0)
    return up, ev, ot


def test_every_task_carries_its_job_and_the_main_job_has_the_seeds_shape():
    plan = af.compile(list(_jobs()), machines=2)
    names = [j.name for j in plan.jobs]
    assert names == ["update", "eval", "other", "__save__", "__load__",
                     "push:update/x", "pull:update/w", "pull:eval/y", "push:other/z",
                     "pull:other/z2", "push:__save__/__path__", "push:__load__/__path__",
                     "main"]
    main = len(names) - 1
    assert [j.job_id for j in plan.jobs] == list(range(len(names)))
    by_job = Counter(t.job_id for t in plan.tasks)
    assert set(by_job) == set(range(len(names)))
    kinds = Counter(t.task_type for t in plan.tasks if t.job_id == main)
    assert kinds["wait_and_send_ids"] == kinds["reentrant_lock"] == 1
    assert kinds["case"] == kinds["esac"] == 1
    # per critical section (one per job): a source tick, an identity and a sink tick per
    # machine, and a callback tick per machine
    cs = main
    assert kinds["callback_tick"] == cs * 2
    assert kinds["tick"] == cs * (1 + 2 + 2)
    # like seed 001's main job, every main-job task is on machine 0 (with the client); the
    # identity tick for machine 1 reaches the job's tasks there through a comm_net
    assert {t.machine_id for t in plan.tasks if t.job_id == main
            and t.task_type != "comm_net"} == {0}
    firsts = []
    for cs in range(main):
        ident = next(t for t in plan.tasks if t.name == f"main/identity_tick_cs{cs}_m1")
        (gate,) = ident.produced.values()
        for c in gate.consumer_task_ids:
            if plan.task(c).task_type == "comm_net":
                assert plan.task(c).machine_id == 1
                firsts += [(cs, plan.task(f)) for d in plan.task(c).produced.values()
                           for f in d.consumer_task_ids]
    assert firsts and all(t.machine_id == 1 and t.job_id == c for c, t in firsts)
    # every input and output of every job is on machine 0, where the client is, in a push
    # or pull job of its own
    io = [t for t in plan.tasks if t.task_type in ("input", "output")]
    assert {t.machine_id for t in io} == {0}
    assert all(names[t.job_id].startswith(("push:", "pull:")) for t in io)
    # a client request sends a job's push jobs, the job, then its pull jobs
    order = plan.tasks_by_type("wait_and_send_ids")[0].attrs["request_order"]
    assert order[:3] == [5, 0, 6] and sorted(order) == list(range(main))
    # the back edge: esac's only produced desc is the lock's "end" input
    lock = plan.tasks_by_type("reentrant_lock")[0]
    esac = plan.tasks_by_type("esac")[0]
    (back,) = esac.produced.values()
    assert back.consumer_task_ids == [lock.task_id]
    assert lock.attrs["end_desc"] == back.regst_desc_id


def test_conflicts_writers_against_every_toucher_readers_overlap():
    plan = af.compile(list(_jobs(ranks=(0,))), machines=1)
    conf = plan.tasks_by_type("reentrant_lock")[0].attrs["conflicts"]
    # update(0) writes w: conflicts with itself, eval(1), save(3), load(4); not other(2)
    assert conf["0"] == [0, 1, 3, 4]
    assert conf["1"] == [0, 4]  # eval only reads
    assert conf["2"] == []
    assert conf["3"] == [0, 4]
    assert all(conf[str(i)] == [] for i in range(5, 12))  # push/pull jobs touch nothing


def test_jobs_naming_one_variable_share_one_state_per_device():
    plan = af.compile(list(_jobs()), machines=2)
    keys = {}
    for t in plan.tasks:
        for e in t.exec_sequence:
            if e.kernel.op_type in ("variable_part", "assign"):
                keys.setdefault(e.kernel.attrs["state_key"], set()).add(
                    (plan.jobs[t.job_id].name, t.machine_id))
    assert sorted(keys) == ["w@0", "w@1"]  # one per part, whichever job names it
    assert {j for j, _m in keys["w@0"]} == {"update", "eval", "__save__", "__load__"}
    assert {m for _j, m in keys["w@1"]} == {1}


def test_merged_plan_round_trips_and_validates_with_its_dry_run(tmp_path):
    plan = af.compile(list(_jobs()), machines=2)
    save_plan(plan, tmp_path / "m.plan")
    back = load_plan(tmp_path / "m.plan")
    assert [j.name for j in back.jobs] == [j.name for j in plan.jobs]
    assert [t.job_id for t in back.tasks] == [t.job_id for t in plan.tasks]
    back.validate()  # includes the dry run through the main job


def test_validation_names_a_broken_main_job():
    plan = af.compile(list(_jobs(ranks=(0,))), machines=1)
    case = plan.tasks_by_type("case")[0]
    case.attrs["cs_descs"] = case.attrs["cs_descs"][:-1]
    with pytest.raises(PlanValidationError,
                       match=r"\(main/case\): attrs cs_descs must list its produced"):
        plan.validate()


def test_a_variable_declared_differently_by_two_jobs_is_refused():
    with af.Job("a") as a:
        af.output("w", af.variable("w", (4,), init="zeros") + 1.0)
    with af.Job("b") as b:
        af.output("w", af.variable("w", (4,), init="normal", seed=3) + 1.0)
    with pytest.raises(CompileError, match=r"variable 'w' is declared differently by job 'a' "
                       r"and job 'b' .*init: zeros vs normal"):
        af.compile([a, b])


def test_bad_multi_job_input_is_refused_with_the_job_named():
    up, ev, _ = _jobs()
    with pytest.raises(CompileError, match=r"used twice: \['update'\]"):
        af.compile([up, up])
    with af.Job("push:x") as reserved:
        af.output("y", af.input("x", (2,)) + 1.0)
    with pytest.raises(CompileError, match="job name 'push:x' is reserved"):
        af.compile([reserved])
    with af.Job("counted", pieces=3) as c:
        af.output("y", af.input("x", (2,)) + 1.0)
    with pytest.raises(CompileError, match=r"job 'counted': .* leave pieces=None"):
        af.compile([c, ev])
    with af.Job("bad"):
        x = af.input("x", (2,))
        with pytest.raises(UsageError, match="'x' is not a variable of job 'bad'"):
            x.add_(1.0)
        w = af.variable("w", (2,))
        with pytest.raises(UsageError, match=r"has shape \(3,\), variable 'w' has \(2,\)"):
            af.functional.assign(w, af.input("y", (3,)))


def test_assigning_one_variable_twice_in_a_job_is_refused():
    with af.Job("twice") as j:
        w = af.variable("w", (2,))
        w.add_(1.0)
        w.mul_(2.0)
    with pytest.raises(CompileError, match=r"job 'twice': variables \['w'\] are assigned "
                                           r"more than once"):
        af.compile(j)


def test_unit_per_task_would_split_a_variable_over_units_and_is_refused():
    with pytest.raises(CompileError, match=r"variable part 'w@0' is used on machine 0 by "
                                           r"tasks on units \[\d+, \d+.*compile without "
                                           r"unit_per_task"):
        af.compile(list(_jobs(ranks=(0,))), machines=1, unit_per_task=True)


def test_plan_show_groups_tasks_by_job_and_draws_the_main_job():
    from actorflow.plan.describe import show

    text = show(af.compile(list(_jobs()), machines=2))
    assert "job 0 'update'" in text and "writes ['w']" in text
    assert "job 2 'other'" in text
    assert "main job" in text
    assert "wait_and_send_ids -> reentrant_lock -> case" in text
    assert "esac -> back edge -> reentrant_lock" in text


def test_a_single_job_that_assigns_gets_a_main_job_and_runs_in_piece_order():
    P = af.placement("cpu", ranks=[0, 1])
    with af.Job("acc") as j:
        x = af.input("x", (4,), placement=P, sbp=af.sbp.split(0))
        w = af.variable("w", (4,), placement=P, sbp=af.sbp.broadcast)
        af.output("w", w.add_(x.to_global(sbp=af.sbp.broadcast)))
    plan = af.compile(j, machines=2)
    assert plan.is_multi_job
    xs = [np.full(4, i, np.float32) for i in range(6)]
    with af.Session(plan, timeout=20) as s:
        outs = list(s.run_many(({"x": x} for x in xs), window=4))
    np.testing.assert_array_equal(outs, np.cumsum(xs, axis=0))
