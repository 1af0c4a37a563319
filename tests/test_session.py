"""The Session API: run, run_many, run_to_end, the with-block drain, and bad feeds."""

from __future__ import annotations

import numpy as np
import pytest

import actorflow as af
from actorflow.errors import ActorflowError, SessionClosed, UsageError


def affine(register_num: int = 2, machines: int = 1) -> af.Plan:
    """y = relu(x) * 2 + x ; s = sum(x)   (two outputs, x fans out to three consumers)."""
    b = af.PlanBuilder(register_num=register_num, machines=machines)
    x = b.input("x", (3, 4), "float32")
    r = b.op("scalar_mul", b.op("relu", x), scalar=2.0, machine=machines - 1)
    b.output("y", b.op("add", r, x))
    b.output("s", b.op("reduce_sum", x))
    return b.build()


def want(x: np.ndarray) -> dict[str, np.ndarray]:
    return {"y": np.maximum(x, 0) * 2 + x, "s": x.sum()}


def batch(i: int) -> np.ndarray:
    return np.random.default_rng(i).standard_normal((3, 4)).astype(np.float32)


def test_run_one_piece_returns_every_output():
    with af.Session(affine()) as s:
        out = s.run({"x": batch(0)})
    assert set(out) == {"y", "s"}
    np.testing.assert_allclose(out["y"], want(batch(0))["y"], rtol=1e-6)
    np.testing.assert_allclose(out["s"], want(batch(0))["s"], rtol=1e-5)


def test_single_output_returns_the_array():
    b = af.PlanBuilder()
    b.output("y", b.op("neg", b.input("x", (2,), "float64")))
    with af.Session(b.build()) as s:
        np.testing.assert_array_equal(s.run({"x": np.array([1.0, -2.0])}), [-1.0, 2.0])
        np.testing.assert_array_equal(s.run({"x": np.array([3.0, 4.0])}), [-3.0, -4.0])


@pytest.mark.parametrize("register_num, machines, window", [(1, 1, 1), (2, 2, 8), (4, 3, 3)])
def test_run_many_is_in_order_and_exact(register_num, machines, window):
    feeds = [{"x": batch(i)} for i in range(40)]
    with af.Session(affine(register_num, machines)) as s:
        outs = list(s.run_many(feeds, window=window))
    assert len(outs) == 40
    for i, o in enumerate(outs):
        np.testing.assert_allclose(o["y"], want(batch(i))["y"], rtol=1e-6)


def test_outputs_are_copies_not_regst_memory():
    b = af.PlanBuilder(register_num=1)
    b.output("y", b.op("identity", b.input("x", (2,), "float64")))
    with af.Session(b.build()) as s:
        ys = [s.run({"x": np.full(2, float(i))}) for i in range(3)]
    assert [y[0] for y in ys] == [0.0, 1.0, 2.0]


def test_run_to_end_drains_a_source_plan():
    b = af.PlanBuilder(register_num=2)
    src = b.source("arange", {"stop": 4, "dtype": "float64", "piece_scale": 10}, piece_num=5)
    b.output("y", b.op("scalar_add", src, scalar=0.5))
    plan = b.build()
    with af.Session(plan) as s:
        ys = s.run_to_end()["y"]
    assert [list(y) for y in ys] == [[10 * i + k + 0.5 for k in range(4)] for i in range(5)]
    with af.Session(plan) as s:
        assert len(s.run_to_end(pieces=2)["y"]) == 2  # pieces= overrides piece_num


def test_run_to_end_with_acc_and_repeat_flushes_the_partial_group():
    b = af.PlanBuilder(register_num=2)
    src = b.source("constant", {"shape": [2], "value": 1.0, "piece_scale": 1}, piece_num=7)
    acc = b.acc(src, 3)
    b.output("sums", acc)
    b.output("rep", b.repeat(acc, 2))
    with af.Session(b.build()) as s:
        out = s.run_to_end()
    # pieces are 1..7; groups {1,2,3} {4,5,6} {7}
    assert [float(v[0]) for v in out["sums"]] == [6.0, 15.0, 7.0]
    assert [float(v[0]) for v in out["rep"]] == [6.0, 6.0, 15.0, 15.0, 7.0, 7.0]


def test_leaving_the_with_block_drains_pieces_in_flight():
    plan = affine()
    with af.Session(plan) as s:
        for i in range(5):
            s.feed({"x": batch(i)})  # never fetched
        rt = s.runtime
    assert rt._exited == {t.task_id for t in plan.tasks}
    assert all(not u.thread.is_alive() for u in rt.units.values())


def test_closed_session_refuses_work():
    s = af.Session(affine())
    s.close()
    with pytest.raises(SessionClosed, match="session is closed"):
        s.run({"x": batch(0)})


@pytest.mark.parametrize("value, msg", [
    (np.zeros((4, 3), np.float32), r"input 'x': expected shape \(3, 4\) float32, got \(4, 3\) "
                                   r"float32"),
    (np.zeros((3, 4), np.complex64), r"input 'x': expected dtype float32, got complex64"),
    (np.full((3, 4), "a"), r"input 'x': expected dtype float32, got <U1"),
])
def test_wrong_shape_or_dtype_names_the_input(value, msg):
    with af.Session(affine()) as s:
        with pytest.raises(UsageError, match=msg):
            s.run({"x": value})
        # the session is still usable after a rejected feed
        np.testing.assert_allclose(s.run({"x": batch(1)})["s"], batch(1).sum(), rtol=1e-5)


def test_castable_dtype_is_converted():
    with af.Session(affine()) as s:
        out = s.run({"x": np.ones((3, 4), np.int64)})
    np.testing.assert_array_equal(out["y"], np.full((3, 4), 3.0))


def test_wrong_input_names():
    with af.Session(affine()) as s:
        with pytest.raises(UsageError, match=r"missing \['x'\], unknown \['z'\]"):
            s.run({"z": batch(0)})


def test_run_to_end_needs_sources_and_a_piece_count():
    with af.Session(affine()) as s, pytest.raises(UsageError, match="needs a plan with source"):
        s.run_to_end()
    b = af.PlanBuilder()
    b.output("y", b.source("arange", {"stop": 2}))
    with af.Session(b.build()) as s, pytest.raises(UsageError, match="has no piece count"):
        s.run_to_end()


def test_two_inputs_fan_in():
    b = af.PlanBuilder()
    b.output("z", b.op("mul", b.input("a", (2,), "float64"), b.input("b", (2,), "float64")))
    with af.Session(b.build()) as s:
        zs = list(s.run_many({"a": np.full(2, i), "b": np.full(2, 2.0)} for i in range(6)))
    assert [float(z[0]) for z in zs] == [2.0 * i for i in range(6)]


def test_a_reused_feed_buffer_does_not_leak_into_earlier_pieces():
    """run_many feeds ahead; the caller may refill one buffer for every piece."""
    b = af.PlanBuilder(register_num=1)
    b.output("y", b.op("sleep", b.input("x", (2,), "float64"), ms=10))
    buf = np.zeros(2)

    def feeds():
        for i in range(5):
            buf[:] = i
            yield {"x": buf}
            yield {"x": buf[::1]}  # a view of it too

    with af.Session(b.build()) as s:
        ys = [float(y[0]) for y in s.run_many(feeds(), window=10)]
    assert ys == [0.0, 0.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0, 4.0, 4.0]


def test_session_usage_errors_are_actorflow_errors(tmp_path):
    """What the CLI and callers catch as ``ActorflowError`` (and still a ValueError)."""
    with pytest.raises(UsageError, match="pass either recorder= or trace=, not both") as e:
        af.Session(affine(), recorder=object(), trace=tmp_path)
    assert isinstance(e.value, ActorflowError) and isinstance(e.value, ValueError)
    with pytest.raises(UsageError, match="stall_timeout must be > 0 seconds, got 0"):
        af.Session(affine(), stall_timeout=0)
    with pytest.raises(UsageError, match=r"PlanBuilder: machine 2 is out of range for a "
                                         r"1-machine plan"):
        af.PlanBuilder().input("x", (2,), machine=2)
