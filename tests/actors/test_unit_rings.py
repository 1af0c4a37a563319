"""Unit processes of one machine swap actor records through shared-memory rings.

With the compiled core, the node makes a ring segment per unit process (named after the
run, mode 0600) and the units send READY/ACK/EORD to each other through them; the numbers
are those of the Python core's ipc path, the segments are gone after the run, a record a
ring's writer could not have sent fails an authenticated run naming the ring, and ring
capacities hold everything the plan can have in flight.
"""

from __future__ import annotations

import os
import stat
import struct

import numpy as np
import pytest

import actorflow as af
from actorflow.actors import unit_rings
from actorflow.actors.machine_view import MachineView
from actorflow.actors.node import MachineNode
from actorflow.errors import MalformedMessage
from actorflow.transport.auth import ClusterKey, stop_zap, use_key
from actorflow.transport.registry import context
from actorflow.transport.shm import list_run_segments

pytestmark = pytest.mark.skipif(unit_rings.unavailable() is not None,
                                reason=f"no rings: {unit_rings.unavailable()}")


@pytest.fixture(scope="module", autouse=True)
def _zap_of_this_module():
    """The data context's ZAP handler (started by an authenticated node) stops once:
    stopping and restarting it per test races on its inproc endpoint."""
    yield
    stop_zap(context("data"))


def chain(pieces: int, register_num: int = 2, ms: float = 0.0):
    """src -> stage1 -> stage2 -> output, one unit process each."""
    b = af.PlanBuilder(machines=1, register_num=register_num)
    x = b.source("constant", {"shape": [8], "dtype": "float32", "value": -1.5},
                 piece_num=pieces, name="src")
    x = b.op("sleep", x, ms=ms, name="stage1") if ms else b.op("abs", x, name="stage1")
    x = b.op("scalar_mul", x, scalar=2.0, name="stage2")
    b.output("y", x)
    return b.build()


def run(plan, pieces: int, node_hook=None, timeout: float = 60.0) -> dict:
    got: dict = {}
    node = MachineNode(plan, 0, unit="process",
                       on_deliver=lambda t, p, a: t is not None and got.update({p: a["out"]}))
    try:
        node.start()
        if node_hook is not None:
            node_hook(node)
        node.command(next(t for t in plan.tasks if t.name == "src").task_id, "start", pieces)
        node.wait_exited(timeout=timeout)
    finally:
        node.close()
    assert list_run_segments(node.run_id) == []  # rings and regsts: nothing left
    return got


@pytest.mark.parametrize("stream", ["inline", "deferred"])
def test_units_swap_records_through_rings_and_get_the_numbers_right(monkeypatch, stream):
    """The inline CPU stream: each unit's whole loop runs in the compiled core over its
    rings; the deferred stream: the Python loop, over the same rings."""
    monkeypatch.setenv("ACTORFLOW_CPU_STREAM", stream)
    plan = chain(300, register_num=3)
    seen = {}
    loops = {}

    def look(node):
        rings = node.hosting.rings
        assert rings is not None, "the node made no rings"
        for name in rings.names.values():
            st = os.stat(f"/dev/shm/{name}")
            seen[name] = stat.S_IMODE(st.st_mode)
        loops.update(node.hosting.loops)
    got = run(plan, 300, look)
    assert set(loops.values()) == {"native" if stream == "inline" else "python"}
    units = sorted({t.thrd_id for t in plan.tasks})
    assert len(seen) == len(units) >= 4 and set(seen.values()) == {0o600}
    assert sorted(got) == list(range(300))
    for p, y in got.items():
        np.testing.assert_array_equal(y, np.full(8, 3.0, np.float32), err_msg=f"piece {p}")


def test_capacity_holds_everything_a_plan_can_have_in_flight():
    plan = chain(4, register_num=5)
    view = MachineView(plan, 0)
    units = sorted({t.thrd_id for t in plan.tasks})
    by_name = {t.name: t.thrd_id for t in plan.tasks if t.name}
    src, s1 = by_name["src"], by_name["stage1"]
    # src -> stage1: 5 READYs + 1 EORD; stage1 -> src: 5 ACKs; unrelated units: nothing
    assert unit_rings.in_flight_bound(view, src, s1) == 6
    assert unit_rings.in_flight_bound(view, s1, src) == 5
    assert unit_rings.in_flight_bound(view, src, by_name["stage2"]) == 0
    cap = unit_rings.capacity_for(view, s1, [u for u in units if u != s1])
    assert cap >= 2 * 6 + 64 and cap & (cap - 1) == 0


def test_records_round_trip_the_record_layout():
    from actorflow._core import _records

    header = [0, 7, 9, 3, 2, 41, 5, (7 << 32) | 5, 0, -1]
    rec = unit_rings.to_record(header)
    assert len(rec) == 64 == unit_rings.RECORD_BYTES
    assert list(_records.unpack(rec)) == header  # the C record's own reading of the bytes
    assert unit_rings.from_record(unit_rings.RECORD.unpack(rec)) == header


def _forge(name: str, ring: int, header: list) -> None:
    """Write a record into ring ``ring`` of a segment and publish it, as a process of the
    same user that bypasses the ring's writer claim could (the real writer of that ring
    never sends to this reader, so nothing races with us)."""
    path = f"/dev/shm/{name}"
    with open(path, "r+b") as f:
        hdr = f.read(64)
        cap, nrings = struct.unpack_from("<I", hdr, 20)[0], struct.unpack_from("<I", hdr, 24)[0]
        ctl = 128 + ring * 128
        f.seek(ctl)
        head = struct.unpack("<Q", f.read(8))[0]
        stride = -(-cap * 64 // 64) * 64
        data = 128 + nrings * 128 + ring * stride
        f.seek(data + (head % cap) * 64)
        f.write(unit_rings.to_record(header))
        f.flush()
        f.seek(ctl)
        f.write(struct.pack("<Q", head + 1))


@pytest.mark.parametrize("stream", ["inline", "deferred"])  # the C check, the Python one
def test_a_record_its_ring_writer_could_not_send_fails_an_authenticated_run(monkeypatch,
                                                                          stream):
    monkeypatch.setenv("ACTORFLOW_CPU_STREAM", stream)
    plan = chain(10_000, ms=2.0)  # long enough to be running when the record lands
    by_name = {t.name: t for t in plan.tasks if t.name}
    out = next(t for t in plan.tasks if t.task_type == "output")
    src, stage2 = by_name["src"], by_name["stage2"]
    d = next(iter(stage2.produced.values()))

    def forge(node):
        rings = node.hosting.rings
        writers = [u for u in rings.units if u != out.thrd_id]
        # in the output unit's ring written by the source's unit, a READY "from stage2":
        # every field is right except that stage2 does not live on the source's unit
        _forge(rings.names[out.thrd_id], writers.index(src.thrd_id),
               [0, stage2.task_id, out.task_id, d.regst_desc_id, 0, 0, 0, 1, 0, -1])
    use_key(ClusterKey.generate())
    try:
        # the forgery's own error (not a timeout of the 10,000-piece run): noticed at once
        with pytest.raises(MalformedMessage, match=rf"ring of unit {src.thrd_id} claims sender "
                                                   rf"task {stage2.task_id}"):
            run(plan, 10_000, forge)
    finally:
        use_key(None)


@pytest.mark.parametrize("stream", ["inline", "deferred"])
def test_without_the_key_such_a_record_is_dropped_and_logged(capfd, monkeypatch, stream):
    """Unauthenticated (``--insecure``): the record is dropped and counted, the run goes on
    and its numbers are right."""
    monkeypatch.setenv("ACTORFLOW_CPU_STREAM", stream)
    plan = chain(600, ms=1.0)
    by_name = {t.name: t for t in plan.tasks if t.name}
    out = next(t for t in plan.tasks if t.task_type == "output")
    src, stage2 = by_name["src"], by_name["stage2"]
    d = next(iter(stage2.produced.values()))

    def forge(node):
        rings = node.hosting.rings
        writers = [u for u in rings.units if u != out.thrd_id]
        _forge(rings.names[out.thrd_id], writers.index(src.thrd_id),
               [0, stage2.task_id, out.task_id, d.regst_desc_id, 0, 0, 0, 1, 0, -1])
    got = run(plan, 600, forge)
    assert sorted(got) == list(range(600))
    err = capfd.readouterr().err
    assert (f"machine 0 unit {out.thrd_id}: malformed message from peer machine 0 unit "
            f"{src.thrd_id} dropped (a record in the ring of unit {src.thrd_id} claims sender "
            f"task {stage2.task_id}") in err
