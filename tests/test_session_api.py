"""``af.Session(plan)`` is one class with one documented API for plans of one job and of
several: the shared methods take a job name where the plan has several (and may name the
only job of a plan of one), and a method a kind of plan does not offer raises a
``UsageError`` saying what to call instead."""

from __future__ import annotations

import inspect
import re

import numpy as np
import pytest

import actorflow as af
from actorflow.errors import UsageError
from actorflow.session import Session


def one_job() -> af.Plan:
    with af.Job("double") as j:
        af.output("y", af.input("x", (3,)) * 2.0)
    return af.compile(j, machines=1)


def two_jobs() -> af.Plan:
    with af.Job("add") as add:
        w = af.variable("w", (3,))
        w.add_(af.input("x", (3,)))
    with af.Job("read") as read:
        af.output("w", af.variable("w", (3,)) * 1.0)
    return af.compile([add, read], machines=1)


def public_methods() -> set[str]:
    return {n for n, v in vars(Session).items()
            if not n.startswith("_") and (callable(v) or isinstance(v, property))}


def test_both_kinds_of_plan_get_the_same_class():
    with af.Session(one_job(), timeout=20) as a, af.Session(two_jobs(), timeout=20) as b:
        assert type(a) is Session and type(b) is Session
        assert a.jobs == ["double"]
        assert b.jobs == ["__load__", "__save__", "add", "read"]


def test_every_public_method_is_in_the_documented_table():
    """The module docstring's table names every method, once for both kinds of plan."""
    doc = inspect.getmodule(Session).__doc__ or ""
    table = doc[doc.index("method "):]
    names = set(re.findall(r"^    (\w+)", table, re.M)) | set(
        re.findall(r",\s+(\w+)\(", table))
    assert public_methods() <= names | {"jobs"}, public_methods() - names
    assert {"run", "run_many", "feed", "fetch", "run_to_end", "submit", "save", "load",
            "close", "jobs"} <= public_methods()


def test_shared_methods_take_the_job_name_where_there_are_several():
    x = np.arange(3, dtype=np.float32)
    with af.Session(one_job(), timeout=20) as s:
        np.testing.assert_array_equal(s.run({"x": x}), 2 * x)
        np.testing.assert_array_equal(s.run("double", {"x": x + 1}), 2 * (x + 1))
        got = list(s.run_many("double", ({"x": x + i} for i in range(4)), window=2))
        assert [float(g[0]) for g in got] == [0.0, 2.0, 4.0, 6.0]
        with pytest.raises(UsageError, match=r"no job 'add'; its jobs: \['double'\]"):
            s.run("add", {"x": x})
    with af.Session(two_jobs(), timeout=20) as s:
        assert s.run("add", {"x": x}) is None
        s.run("add", {"x": x})
        np.testing.assert_array_equal(s.run("read"), 2 * x)  # one output: the array
        outs = list(s.run_many("read", [{}, {}]))
        assert len(outs) == 2 and all(np.array_equal(o, 2 * x) for o in outs)
        with pytest.raises(UsageError, match=r"the plan has jobs \['add', 'read'\]: name the "
                                             r"one to run"):
            s.run({"x": x})


@pytest.mark.parametrize("call, instead", [
    (lambda s: s.submit("double", {}), r"Session.submit: a plan of one job takes pieces in "
                                       r"order: feed\(feeds\) then fetch\(\)"),
    (lambda s: s.save("ck"), r"Session.save: checkpoints need a plan compiled from a list of "
                             r"jobs, af.compile\(\[job, ...\]\)"),
    (lambda s: s.load("ck"), r"Session.load: checkpoints need"),
])
def test_a_plan_of_one_job_names_what_to_call_instead(call, instead):
    with af.Session(one_job(), timeout=20) as s:
        with pytest.raises(UsageError, match=instead):
            call(s)
        np.testing.assert_array_equal(s.run({"x": np.ones(3)}), np.full(3, 2.0))  # still fine


@pytest.mark.parametrize("call, instead", [
    (lambda s: s.feed({"x": np.ones(3)}), r"Session.feed: a plan of several jobs takes each "
                                          r"piece by job name: submit\(job, feeds\)"),
    (lambda s: s.fetch(), r"Session.fetch: .*submit\(job, feeds\)"),
    (lambda s: s.run_to_end(), r"Session.run_to_end: a plan of several jobs runs one piece "
                               r"per request: run\(job, feeds\)"),
])
def test_a_plan_of_several_jobs_names_what_to_call_instead(call, instead):
    with af.Session(two_jobs(), timeout=20) as s:
        with pytest.raises(UsageError, match=instead):
            call(s)
        s.run("add", {"x": np.ones(3)})
        np.testing.assert_array_equal(s.run("read"), np.ones(3))  # still fine


def test_arguments_in_the_wrong_place_are_named():
    with af.Session(one_job(), timeout=20) as s:
        with pytest.raises(UsageError, match=r"run\(feeds\) or run\(job, feeds\): the first "
                                             r"argument is a dict, not a job name"):
            s.run({"x": np.ones(3)}, {"x": np.ones(3)})
        with pytest.raises(UsageError, match="feeds must be a mapping of input name -> array, "
                                             "got list"):
            s.run([1.0, 2.0, 3.0])
