"""Random interleavings of update and eval jobs from two client threads (hypothesis).

Whatever order the threads' requests reach the main job in, the numbers must be those of
*some* serial order of all requests that keeps each thread's own order (the lock runs a
writer alone, so the run is equivalent to its admission order).  The model is numpy:
``update(x)`` sets ``w = w * 0.5 + x`` (order matters), ``eval`` returns ``w``.  A torn read
(an eval seeing part of ``w`` before an update and part after) matches no model state, so
the search below finds no order and the test fails.
"""

from __future__ import annotations

import threading
from functools import cache

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import actorflow as af

ROWS = 6


@cache
def _plan(machines: int) -> af.Plan:
    P = af.placement("cpu", ranks=list(range(machines)))
    with af.Job("update") as up:
        x = af.input("x", (ROWS, 2), placement=P, sbp=af.sbp.split(0))
        w = af.variable("w", (ROWS, 2), placement=P, sbp=af.sbp.split(0))
        w.assign_(w * 0.5 + x)
    with af.Job("eval") as ev:
        af.output("w", af.variable("w", (ROWS, 2), placement=P, sbp=af.sbp.split(0)))
    return af.compile([up, ev], machines=machines)


def _x(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((ROWS, 2)).astype(np.float32)


def _serial_order_exists(threads: list[list], results: list[list], final: np.ndarray) -> bool:
    """DFS over merges of the threads' request lists, replaying the numpy model."""
    def step(pos: tuple[int, ...], w: np.ndarray) -> bool:
        if all(p == len(ops) for p, ops in zip(pos, threads)):
            return np.array_equal(w, final)
        for k, ops in enumerate(threads):
            p = pos[k]
            if p == len(ops):
                continue
            op = ops[p]
            nxt = (*pos[:k], p + 1, *pos[k + 1:])
            if op[0] == "u":
                if step(nxt, w * np.float32(0.5) + _x(op[1])):
                    return True
            elif np.array_equal(results[k][p], w) and step(nxt, w):
                return True
        return False

    return step((0,) * len(threads), np.zeros((ROWS, 2), np.float32))


ops = st.lists(st.one_of(st.tuples(st.just("u"), st.integers(0, 10_000)),
                         st.tuples(st.just("e"))), min_size=1, max_size=5)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(machines=st.integers(1, 3), a=ops, b=ops)
def test_two_threads_give_the_numbers_of_some_serial_order(machines, a, b):
    threads = [a, b]
    results: list[list] = [[None] * len(a), [None] * len(b)]
    errors: list[BaseException] = []
    with af.Session(_plan(machines), timeout=20) as s:
        def client(k: int) -> None:
            try:
                for i, op in enumerate(threads[k]):
                    if op[0] == "u":
                        s.run("update", {"x": _x(op[1])})
                    else:
                        results[k][i] = s.run("eval")
            except BaseException as e:
                errors.append(e)

        ts = [threading.Thread(target=client, args=(k,)) for k in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(60)
        assert not errors, errors
        final = s.run("eval")
    assert _serial_order_exists(threads, results, final), (
        f"no serial order of {threads} explains evals {results} and final {final}")


def test_the_checker_rejects_a_torn_read_and_a_wrong_order():
    before = np.zeros((ROWS, 2), np.float32)
    after = before * np.float32(0.5) + _x(7)
    torn = np.concatenate([before[:3], after[3:]])
    threads = [[("u", 7)], [("e",)]]
    assert _serial_order_exists(threads, [[None], [after]], after)
    assert _serial_order_exists(threads, [[None], [before]], after)
    assert not _serial_order_exists(threads, [[None], [torn]], after)
    # two updates: only the order that produced the final value is accepted
    both = (before * np.float32(0.5) + _x(1)) * np.float32(0.5) + _x(2)
    assert _serial_order_exists([[("u", 1)], [("u", 2)]], [[None], [None]], both)
    assert not _serial_order_exists([[("u", 1), ("u", 2)]], [[None, None]],
                                    (before * np.float32(0.5) + _x(2)) * np.float32(0.5) + _x(1))
