"""A job with both inputs fed by the client and sources (random inputs) inside it.

Session.run only feeds inputs; the sources are paced by them (one piece per fed piece,
numbered like it) and end when the inputs close.  Before, a source beside an input never
made a piece and ``run`` waited out its timeout.  Run on both cores, thread units in one
Session and process units on two machines (a source on the machine without the input
gets its tick over the wire).
"""

from __future__ import annotations

import numpy as np
import pytest

import actorflow as af
from actorflow.actors.cores import available_cores
from actorflow.session import ClusterSession

RUNTIMES = {
    "threads": lambda plan: af.Session(plan, timeout=20),
    "process-tcp-2": lambda plan: ClusterSession(plan, unit="process", scheme="tcp",
                                                 timeout=20),
}
SHAPE = (4, 3)


@pytest.fixture(params=[(r, c) for r in RUNTIMES for c in available_cores()],
                ids=lambda p: f"{p[0]}-{p[1]}")
def session_of(request, monkeypatch):
    runtime, core = request.param
    monkeypatch.setenv("ACTORFLOW_CORE", core)  # unit processes inherit it
    return RUNTIMES[runtime]


def _job() -> af.Plan:
    with af.Job("fed_and_drawn") as job:
        x = af.input("x", SHAPE, placement=af.placement("cpu", ranks=[0]))
        r = af.random_input("r", SHAPE, seed=5, placement=af.placement("cpu", ranks=[1]))
        n = af.random_input("n", SHAPE, seed=6, placement=af.placement("cpu", ranks=[0, 1]),
                            sbp=af.sbp.split(0))
        af.output("y", x * 2.0 + r - n)
    return af.compile(job, machines=2)


def _drawn(seed: int, piece: int) -> np.ndarray:
    return np.random.default_rng([seed, piece]).standard_normal(SHAPE).astype("float32")


def _expected(x: np.ndarray, piece: int) -> np.ndarray:
    return x * np.float32(2.0) + _drawn(5, piece) - _drawn(6, piece)


def _feed(piece: int) -> np.ndarray:
    return np.arange(12, dtype="float32").reshape(SHAPE) * (piece + 1)


def test_sources_make_one_piece_per_fed_piece(session_of):
    plan = _job()
    with session_of(plan) as s:
        first = s.run({"x": _feed(0)})
        rest = list(s.run_many({"x": _feed(p)} for p in range(1, 7)))
    for p, y in enumerate([first, *rest]):
        np.testing.assert_allclose(y, _expected(_feed(p), p), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("core", available_cores())
def test_sources_end_with_the_inputs_when_nothing_was_fed(core, monkeypatch):
    """Closing a session that was never fed ends its paced sources too: no piece, no
    hang, and no command for a source that has already exited (the close's EORD ends it;
    a ``stop`` sent after that is an error on both cores).  A guard on the fix: before
    it, the sources were simply never started."""
    monkeypatch.setenv("ACTORFLOW_CORE", core)
    plan = _job()
    with af.Session(plan, timeout=20) as s:
        pass
    states = s.runtime.actor_states()
    sources = [st for st in states if st["kind"] == "source"]
    assert {st["label"] for st in sources} == {"r", "n"}
    assert all(st["status"] == "exited" and st["acts"] == 0 for st in states), states


@pytest.mark.parametrize("core", available_cores())
def test_a_built_plan_paces_its_source_by_its_input(core, monkeypatch):
    """``PlanBuilder`` follows the compiler's rule: the source (machine 1) acts once per
    piece fed to the input (machine 0)."""
    monkeypatch.setenv("ACTORFLOW_CORE", core)
    b = af.PlanBuilder(machines=2)
    x = b.input("x", (4,), "float32")
    r = b.source("arange", {"stop": 4, "dtype": "float32", "piece_scale": 10.0}, machine=1)
    b.output("y", b.op("add", x, r, machine=1))
    with af.Session(b.build(), timeout=20) as s:
        ys = list(s.run_many({"x": np.full(4, p, np.float32)} for p in range(5)))
    for p, y in enumerate(ys):
        np.testing.assert_array_equal(y, p + np.arange(4, dtype=np.float32) + 10 * p)


def test_run_to_end_on_a_plan_with_inputs_says_to_feed_them():
    """``run_to_end`` would close the inputs before any piece, and the sources they pace
    would make none: it is refused, naming the inputs and what to call, and the session
    runs pieces as before."""
    plan = _job()
    with af.Session(plan, timeout=20) as s:
        with pytest.raises(af.errors.UsageError,
                           match=r"run_to_end: plan 'fed_and_drawn' has inputs \['x'\], "
                                 r"which pace its sources .* call run\(feeds\) or "
                                 r"run_many\(feeds\)"):
            s.run_to_end()
        y = s.run({"x": _feed(0)})
    np.testing.assert_allclose(y, _expected(_feed(0), 0), rtol=1e-6, atol=1e-6)
