"""Sessions drive the jobs of a multi-job plan by name (run, run_many, submit), from threads."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import actorflow as af
from actorflow.errors import ActorflowError, JobRunError, UsageError


def _plan(machines: int, missing_file: str | None = None):
    P = af.placement("cpu", ranks=list(range(machines)))
    with af.Job("update") as up:
        x = af.input("x", (machines * 2, 3), placement=P, sbp=af.sbp.split(0))
        w = af.variable("w", (machines * 2, 3), placement=P, sbp=af.sbp.split(0))
        w.add_(x * 0.5)  # no output: the callback ticks alone complete the request
    with af.Job("eval") as ev:
        w = af.variable("w", (machines * 2, 3), placement=P, sbp=af.sbp.split(0))
        b = af.variable("b", (3,), init="file", path=missing_file) if missing_file else None
        y = w.sum(dim=0) if b is None else w.sum(dim=0) + b
        af.output("y", y)
        af.output("w", w)
    return af.compile([up, ev], machines=machines)


@pytest.mark.parametrize("machines", [1, 2])
def test_update_and_eval_interleaved_match_numpy(machines):
    rng = np.random.default_rng(machines)
    w = np.zeros((machines * 2, 3), np.float32)
    with af.Session(_plan(machines), timeout=20) as s:
        assert type(s) is af.Session and s.jobs == ["__load__", "__save__", "eval", "update"]
        for _ in range(4):
            x = rng.standard_normal((machines * 2, 3)).astype(np.float32)
            assert s.run("update", {"x": x}) is None
            w += x * np.float32(0.5)
            out = s.run("eval")
            np.testing.assert_allclose(out["w"], w, rtol=1e-6)
            np.testing.assert_allclose(out["y"], w.sum(axis=0), rtol=1e-5)
        evals = list(s.run_many("eval", ({} for _ in range(6)), window=3))
        assert all(np.array_equal(e["w"], evals[0]["w"]) for e in evals)
        fut = s.submit("eval")
        np.testing.assert_allclose(fut.result(10)["w"], w, rtol=1e-6)


def test_several_threads_at_once_the_lock_keeps_writers_apart():
    """Two threads run update and eval concurrently: every eval sees a whole number of
    updates (never half an update across the two parts), and the total is exact."""
    plan = _plan(2)
    one = np.ones((4, 3), np.float32)
    seen: list[np.ndarray] = []
    errors: list[BaseException] = []
    with af.Session(plan, timeout=20) as s:
        def client(n: int) -> None:
            try:
                for _ in range(n):
                    s.run("update", {"x": one})
                    seen.append(s.run("eval")["w"])
            except BaseException as e:  # surfaced below
                errors.append(e)

        threads = [threading.Thread(target=client, args=(6,)) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert not errors
        final = s.run("eval")["w"]
    np.testing.assert_array_equal(final, np.full((4, 3), 6.0, np.float32))  # 12 x 0.5
    for w in seen:
        assert np.all(w == w.flat[0]), "torn read: parts of w from different updates"
        assert 0.5 <= w.flat[0] <= 6.0


def test_unknown_jobs_and_bad_feeds_are_named():
    with af.Session(_plan(1), timeout=10) as s:
        with pytest.raises(UsageError, match=r"no job 'train'; its jobs: \['__load__', "
                                             r"'__save__', 'eval', 'update'\]"):
            s.run("train")
        with pytest.raises(UsageError, match=r"job 'update': feeds must name exactly its "
                                             r"inputs \['x'\]; missing \['x'\]"):
            s.run("update", {})
        with pytest.raises(UsageError, match=r"job 'update', input 'x': expected shape "
                                             r"\(2, 3\)"):
            s.run("update", {"x": np.zeros(3)})
        with pytest.raises(UsageError, match=r"Session.feed: a plan of several jobs takes each "
                                             r"piece by job name: submit\(job, feeds\)"):
            s.feed({"x": np.zeros((2, 3))})


def test_a_kernel_error_names_the_job_the_task_and_the_piece(tmp_path):
    plan = _plan(1, missing_file=str(tmp_path / "nope.npy"))
    s = af.Session(plan, timeout=10)
    try:
        s.run("update", {"x": np.ones((2, 3), np.float32)})  # fine: does not read b
        with pytest.raises(JobRunError, match=r"piece 0 of job 'eval' did not finish: job "
                                              r"'eval', task \d+ \(eval/.*\), piece 0 failed: "
                                              r"kernel of op 'b@0' \(job 'eval', task \d+, "
                                              r"machine 0\).*nope.npy"):
            s.run("eval")
        with pytest.raises(ActorflowError):
            s.run("update", {"x": np.ones((2, 3), np.float32)})
    finally:
        with pytest.raises(ActorflowError, match=r"nope\.npy"):
            s.close()


def test_jobs_placed_away_from_machine_0_are_fed_and_read_through_it():
    """Inputs and outputs live on machine 0 (push/pull jobs); the job's ops stay on its
    own placement (here machine 1 only)."""
    P1 = af.placement("cpu", ranks=[1])
    with af.Job("far", placement=P1) as far:
        x = af.input("x", (3,), placement=P1)
        w = af.variable("w", (3,), placement=P1)
        af.output("y", w.add_(x) * 2.0)
    plan = af.compile([far], machines=2)
    kernels = {e.kernel.op_type: t.machine_id for t in plan.tasks for e in t.exec_sequence}
    assert kernels["assign"] == 1 and kernels["variable_part"] == 1
    with af.Session(plan, timeout=20) as s:
        ys = [s.run("far", {"x": np.full(3, i, np.float32)}) for i in range(1, 4)]
    np.testing.assert_array_equal(ys, [np.full(3, v, np.float32) for v in (2.0, 6.0, 12.0)])


def test_push_pull_false_feeds_the_jobs_own_inputs():
    plan = af.compile(list(_jobs_for_push_pull()), machines=2, push_pull=False)
    assert not any(j.name.startswith(("push:", "pull:")) for j in plan.jobs)
    with af.Session(plan, timeout=20) as s:
        s.run("update", {"x": np.ones((4, 3), np.float32)})
        np.testing.assert_array_equal(s.run("eval"), np.full((4, 3), 0.5, np.float32))


def _jobs_for_push_pull():
    P = af.placement("cpu", ranks=[0, 1])
    with af.Job("update") as up:
        x = af.input("x", (4, 3), placement=P, sbp=af.sbp.split(0))
        w = af.variable("w", (4, 3), placement=P, sbp=af.sbp.split(0))
        w.add_(x * 0.5)
    with af.Job("eval") as ev:
        af.output("w", af.variable("w", (4, 3), placement=P, sbp=af.sbp.split(0)))
    return up, ev


def test_waits_time_out_naming_the_job():
    """A runtime that never answers (it drops every command): the wait must end with an
    error naming the job and what still runs, not hang."""
    from actorflow.actors.job_client import JobClient
    from actorflow.errors import WaitTimeout

    class Silent:
        error = None

        def push_feed(self, task_id, arrays):
            pass

        def command(self, task_id, name, payload=None):
            pass

        def describe_live(self):
            return "task 7 (eval/w): waits for READY"

    client = JobClient(_plan(1), timeout=0.2)
    client.attach(Silent())
    with pytest.raises(WaitTimeout, match=r"waited 0.2s for a piece of job 'eval'; still "
                                          r"running: task 7 \(eval/w\)"):
        client.run("eval")


def test_a_closed_session_refuses_requests():
    from actorflow.errors import SessionClosed

    s = af.Session(_plan(1), timeout=10)
    s.run("eval")
    s.close()
    with pytest.raises(SessionClosed, match="closed"):
        s.run("eval")
