"""The control plane in one process: a real ControlMaster and ControlClients over tcp.

Clients run on test threads (each owns its socket); the master runs on its own thread.
"""

from __future__ import annotations

import sys
import threading
import time

import numpy as np
import pytest

from actorflow.errors import LaunchError, WaitTimeout
from actorflow.launcher import clock, wire
from actorflow.launcher.client import Aborted, ControlClient
from actorflow.launcher.master import ControlMaster
from actorflow.launcher.ports import free_port
from actorflow.plan.io import plan_from_bytes
from tests.launcher.helpers import SAMPLE

sys.path.insert(0, str(SAMPLE.parent))
import sample_pipeline


@pytest.fixture
def master():
    port = free_port()
    m = ControlMaster(2, sample_pipeline.build_plan, "127.0.0.1", port, run_id="t",
                      heartbeat_timeout=1.0, join_timeout=20)
    m.start()
    yield m
    m.close()


def _in_threads(*fns):
    """Run each fn on its own thread; re-raise the first exception; return results."""
    results: list = [None] * len(fns)
    errors: list = []

    def wrap(i, fn):
        try:
            results[i] = fn()
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=wrap, args=(i, f), name=f"test-client-{i}")
               for i, f in enumerate(fns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    if errors:
        raise errors[0]
    return results


def _client(m: ControlMaster, rank: int) -> ControlClient:
    return ControlClient("127.0.0.1", m.port, rank, 2, connect_timeout=5, master_timeout=3)


def test_rendezvous_plan_kv_barrier_and_clock(master):
    def rank(r):
        c = _client(master, r)
        try:
            sample = c.sync_clock()
            plan = plan_from_bytes(c.hello(f"host{r}", 1000 + r, 10)["plan"])
            if r == 0:
                c.kv_set("greeting", {"from": 0, "n": [1, 2]})
            value = c.kv_get("greeting", timeout=5)  # rank 1 waits until rank 0 set it
            c.barrier("after-kv")
            with pytest.raises(WaitTimeout, match="key 'never'"):
                c.kv_get("never", timeout=0.3)
            return sample, plan, value
        finally:
            c.close()

    (s0, p0, v0), (s1, p1, v1) = _in_threads(lambda: rank(0), lambda: rank(1))
    assert v0 == v1 == {"from": 0, "n": [1, 2]}
    # each machine received only its own tasks, plus the routes of the tasks they talk to
    full = sample_pipeline.build_plan(2)
    assert {t.machine_id for t in p0.tasks} == {0} and {t.machine_id for t in p1.tasks} == {1}
    assert len(p0.tasks) + len(p1.tasks) == len(full.tasks)
    for share in (p0, p1):
        mine = {t.task_id for t in share.tasks}
        neighbours = {c for t in share.tasks for d in t.produced.values()
                      for c in d.consumer_task_ids}
        descs = full.regst_descs()
        neighbours |= {descs[i].producer_task_id for t in share.tasks for i in t.consumed_ids()}
        assert {int(k) for k in share.ctrl["routing"]} == mine | neighbours
    # same host: the clock offset is tiny and bounded by half the round trip
    for s in (s0, s1):
        assert abs(s.offset) <= s.delay / 2 + 1e-3
    offsets = master.clock_offsets
    assert set(offsets) == {0, 1} and all(abs(v) < 0.01 for v in offsets.values())
    assert {m["host"] for m in master.summary()["machines"]} == {"host0", "host1"}


def test_clock_offset_math_recovers_a_skewed_clock():
    # the worker's clock runs 5 s behind the master; 2 ms each way on the wire
    skew, leg = 5.0, 0.002
    t0 = 100.0                      # worker clock
    t1 = t0 + skew + leg            # master clock on receipt
    t2 = t1 + 0.0005                # master replies
    t3 = t2 - skew + leg            # worker clock on receipt
    s = clock.sample(t0, t1, t2, t3)
    assert s.offset == pytest.approx(skew) and s.delay == pytest.approx(2 * leg)
    noisy = clock.sample(t0, t1 + 0.01, t2 + 0.01, t3 + 0.02)
    assert clock.best([noisy, s]) is s


def test_silent_machine_is_declared_lost_and_others_aborted(master):
    joined = threading.Barrier(2)
    done = threading.Event()
    detected: dict = {}

    def healthy():
        c = _client(master, 0)
        try:
            c.sync_clock()
            c.hello("h0", 1, 10)
            joined.wait()
            deadline = time.monotonic() + 60
            with pytest.raises(Aborted) as e:
                while time.monotonic() < deadline:
                    c.poll(0.1)          # heartbeats go out from here
            detected["reason"] = str(e.value)
        finally:
            done.set()
            c.close()

    def silent():
        c = _client(master, 1)
        try:
            c.sync_clock()
            c.hello("h1", 2, 10)
            joined.wait()
            done.wait(60)                # no heartbeats meanwhile: looks dead to the master
        finally:
            c.close()

    _in_threads(healthy, silent)
    assert "machine 1 (host h1, pid 2) lost: no heartbeat" in detected["reason"]
    assert master.error["rank"] == 1 and master.error["kind"] == "lost"


def test_duplicate_and_out_of_range_ranks_are_rejected(master):
    def join(r, world=2):
        c = ControlClient("127.0.0.1", master.port, r, world, connect_timeout=5)
        try:
            c.sync_clock()
            return c.hello("h", 1, 5)
        finally:
            c.close()

    with pytest.raises(LaunchError, match="rank 7 out of range for world size 2"):
        join(7)
    with pytest.raises(LaunchError, match="world size 3 but the master has 2"):
        join(1, world=3)


def test_master_reports_a_bad_plan_to_every_worker():
    m = ControlMaster(2, lambda n: sample_pipeline.build_plan(3), "127.0.0.1", free_port(),
                      join_timeout=5)
    m.start()
    try:
        c = ControlClient("127.0.0.1", m.port, 1, 2, connect_timeout=5)
        try:
            c.sync_clock()
            with pytest.raises(LaunchError, match="plan is for 3 machines but the cluster "
                                                  "has 2"):
                c.hello("h", 1, 5)
        finally:
            c.close()
    finally:
        m.close()


def test_master_port_in_use_is_one_clear_error(master):
    other = ControlMaster(2, None, "127.0.0.1", master.port)
    with pytest.raises(LaunchError, match=f"master port {master.port} on 127.0.0.1 is "
                                          "already in use"):
        other.start()


def test_garbage_on_the_master_port_is_ignored(master):
    import msgpack

    from actorflow.transport import codec, connect

    s = connect(f"tcp://127.0.0.1:{master.port}", "dealer")
    s.send_head(b"\x00not msgpack at all")
    s.send_head(msgpack.packb({"v": 9}))  # not a header at all
    s.send_head(msgpack.packb([9, wire.CTRL, {"t": "hello"}, None]))  # another wire version
    s.send(wire.CTRL, {"no": "type field"})
    s.send_frames(codec.encode(wire.CTRL, {"t": "hello"}, [("x", np.zeros(3))])[:1])  # short
    s.send(wire.CTRL, {"t": "hello", "world_size": 2})  # right version, no rank
    s.close(linger_ms=1000)

    def rank(r):
        c = _client(master, r)
        try:
            c.sync_clock()
            return c.hello("h", r, 10)["t"]
        finally:
            c.close()

    assert _in_threads(lambda: rank(0), lambda: rank(1)) == ["plan", "plan"]
    assert master.error is None
