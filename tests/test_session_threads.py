"""Ordinary mistakes with a Session fail fast and clearly, never with another caller's data."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import actorflow as af
from actorflow.errors import UsageError


def doubler() -> af.Plan:
    b = af.PlanBuilder(register_num=2, machines=2)
    x = b.input("x", (16,), "float64")
    b.output("y", b.op("scalar_mul", b.op("relu", x), scalar=2.0, machine=1))
    return b.build()


def test_run_from_several_threads_gives_each_caller_its_own_pieces():
    errors: list[BaseException] = []
    bad: list[tuple[int, int]] = []

    def worker(tid: int, s: af.Session) -> None:
        try:
            for i in range(40):
                x = np.full(16, tid * 1000.0 + i)
                y = s.run({"x": x})
                if not np.array_equal(y, 2 * x):
                    bad.append((tid, i))
        except BaseException as e:  # collected: a thread's failure must fail the test
            errors.append(e)

    with af.Session(doubler(), timeout=30) as s:
        threads = [threading.Thread(target=worker, args=(k, s)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    assert not errors and not bad, (errors, bad[:5])


def test_fetch_from_another_thread_is_refused_not_answered():
    with af.Session(doubler(), timeout=10) as s:
        s.feed({"x": np.ones(16)})
        got: list[BaseException] = []
        t = threading.Thread(target=lambda: _catch(got, s.fetch))
        t.start()
        t.join(10)
        assert len(got) == 1 and isinstance(got[0], UsageError)
        assert "1 piece(s) fed by another thread are in flight" in str(got[0])
        t = threading.Thread(target=lambda: _catch(got, lambda: s.run({"x": np.ones(16)})))
        t.start()
        t.join(10)
        assert isinstance(got[1], UsageError)
        np.testing.assert_array_equal(s.fetch(), np.full(16, 2.0))  # the feeder still gets it


def _catch(out: list, fn) -> None:
    try:
        fn()
    except BaseException as e:
        out.append(e)


def test_run_with_no_inputs_on_a_source_driven_plan_fails_at_once():
    b = af.PlanBuilder()
    b.output("y", b.op("relu", b.source("random_normal", {"shape": [2], "seed": 1},
                                         piece_num=2)))
    with af.Session(b.build(), timeout=60) as s:
        # a UsageError, not the WaitTimeout the session's 60 s would end in
        with pytest.raises(UsageError, match=r"has no input tasks: its source tasks make the "
                                             r"pieces.*run_to_end\(pieces=N\)"):
            s.run({})
        assert len(s.run_to_end()["y"]) == 2
