"""The compiled receiver (``_core/rx.pxi``, ``rxcheck.h``): messages from other machines
go straight to native units only when ``Inbound`` would pass them.

``NativeReceiver.take`` must never take what the Python check refuses (that goes the
Python way, to be dropped, counted and named); what it takes lands in the receive slot and
reaches the unit's inbox as the record ``Inbound.check`` returns.  Every rule of
tests/actors/test_inbound.py's table is run through it, then random headers.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import actorflow as af
from actorflow.actors.cores import available_cores, make_unit_core
from actorflow.actors.inbound import Inbound
from actorflow.actors.machine_view import MachineView
from actorflow.errors import MalformedMessage
from actorflow.protocol.messages import ACK, CLIENT, CMD, EORD, READY, STOP, Msg
from tests.actors.test_inbound import HEADERS, _ready_body

pytestmark = pytest.mark.skipif("native" not in available_cores(),
                                reason="the compiled core is not built")

MSG, BATCH = 0, 10


class Machine1:
    """Machine 1 of a two-machine plan: its comm_net on a native core, the receive slots of
    machine 0's regst, the Python check and the compiled receiver over the same tables."""

    def __init__(self) -> None:
        from actorflow._core.unit_core import NativeReceiver

        b = af.PlanBuilder(machines=2, register_num=2, name="two")
        x = b.input("x", (4,), "float32")
        b.output("y", b.op("relu", x, machine=1, name="relu"))
        self.plan = plan = b.build()
        view = MachineView(plan.for_machine(1), 1)
        self.comm = plan.tasks_by_type("comm_net")[0]
        self.remote = self.comm.consumed_ids()[0]
        self.slots = [{"out": np.zeros(4, "float32")} for _ in range(2)]
        self.memory = {self.remote: self.slots}
        self.inbound = Inbound("machine 1", view.routing, view.descs,
                               hosted=lambda t: view.routing.get(t, (None,))[0] == 1,
                               buffers=self.memory.get, log=lambda s: None)
        tasks = [t for t in view.plan.tasks if t.machine_id == 1]
        self.core = make_unit_core(tasks, view.producer_of, "unit 1", impl="native")
        self.rx = NativeReceiver(view.routing.keys(), view.descs,
                                 {t.task_id: self.core for t in tasks}, self.memory)

    def python_passes(self, body, metas, frames) -> Msg | None:
        try:
            return self.inbound.check(body, metas, frames, "p")
        except MalformedMessage:
            return None

    def queued(self) -> list[Msg]:
        return self.core.waiting()


@pytest.fixture
def m1() -> Machine1:
    return Machine1()


def test_a_remote_ready_lands_and_reaches_the_units_inbox(m1):
    body = _ready_body(m1.plan, m1.comm, m1.remote, slot=1, piece=5, seq=5)
    data = np.arange(4, dtype="float32") + 1
    assert m1.rx.take(MSG, body, [["out", "<f4", [4]]], [data.tobytes()])
    assert np.array_equal(m1.slots[1]["out"], data) and not m1.slots[0]["out"].any()
    assert m1.queued() == [Msg(*body)] and m1.rx.taken == 1


def test_a_batch_goes_in_order_with_each_ready_in_its_slot(m1):
    heads = [[_ready_body(m1.plan, m1.comm, m1.remote, slot=s, piece=s, seq=s), 1]
             for s in (0, 1)]
    src = m1.plan.regst_descs()[m1.remote].producer_task_id
    eord = Msg(EORD, src, m1.comm.task_id, m1.remote, -1, -1, 2, 9).header()
    heads.append([eord, 0])
    frames = [np.full(4, s + 1, "float32").tobytes() for s in (0, 1)]
    assert m1.rx.take(BATCH, heads, [["out", "<f4", [4]]] * 2, frames)
    assert [m1.slots[s]["out"][0] for s in (0, 1)] == [1.0, 2.0]
    assert m1.queued() == [Msg(*h) for h, _ in heads]


@pytest.mark.parametrize("field, problem", HEADERS,
                         ids=[f"{next(iter(f))}={next(iter(f.values()))!r}" for f, _ in HEADERS])
def test_every_header_the_python_check_drops_is_left_to_it(m1, field, problem):
    body = _ready_body(m1.plan, m1.comm, m1.remote, **field)
    assert m1.python_passes(body, None, []) is None
    assert not m1.rx.take(MSG, body, None, [])
    assert not m1.rx.take(BATCH, [[body, 0]], None, [])
    assert m1.queued() == [] and m1.rx.taken == 0


BLOBS = [  # (type, slot, metas, frames): each one the Python check drops
    (EORD, -1, [["out", "<f4", [4]]], [b"\0" * 16]),
    (READY, 0, [["out", "<f4", [4]]], [b"\0" * 15]),
    (READY, 0, [["out", "<f4", [4]]], []),
    (READY, 0, [["out", "<i4", [4]]], [b"\0" * 16]),
    (READY, 0, [["out", ">f4", [4]]], [b"\0" * 16]),
    (READY, 0, [["out", "<f4", [2, 2]]], [b"\0" * 16]),
    (READY, 0, [["out", "<f4", [4]], ["out", "<f4", [4]]], [b"\0" * 16] * 2),
    (READY, 0, [["out", "<f4", [4]]], [b"\0" * 16, b"\0" * 16]),
    (READY, 0, "out", [b"\0" * 16]),
    (READY, 0, [["out", "<f4"]], [b"\0" * 16]),
    (READY, 0, [[7, "<f4", [4]]], [b"\0" * 16]),
    (READY, 0, [["out", "<f4", [True]]], [b"\0" * 16]),
    (READY, 0, [["out", "<f4", [4.0]]], [b"\0" * 16]),
    (READY, 0, [["out", "xyz", [4]]], [b"\0" * 16]),
    (READY, 0, [["out", "<U4", [4]]], [b"\0" * 64]),
    (READY, 0, [["other", "<f4", [4]]], [b"\0" * 16]),
    (READY, 0, None, [b"x"]),
    (ACK, 0, [["out", "<f4", [4]]], [b"\0" * 16]),
]


@pytest.mark.parametrize("t, slot, metas, frames", BLOBS)
def test_every_blob_problem_is_left_to_the_python_check_and_nothing_lands(m1, t, slot, metas,
                                                                          frames):
    body = _ready_body(m1.plan, m1.comm, m1.remote, type=t, slot=slot,
                       piece=-1 if t == EORD else 0)
    assert m1.python_passes(body, metas, frames) is None
    assert not m1.rx.take(MSG, body, metas, frames)
    assert not any(s["out"].any() for s in m1.slots) and m1.queued() == []


def test_one_bad_entry_leaves_the_whole_batch_to_python(m1):
    good = [_ready_body(m1.plan, m1.comm, m1.remote, slot=0), 1]
    bad = [_ready_body(m1.plan, m1.comm, m1.remote, slot=2), 0]  # slot past register_num
    assert not m1.rx.take(BATCH, [good, bad], [["out", "<f4", [4]]], [b"\1" * 16])
    assert not m1.slots[0]["out"].any() and m1.queued() == []  # nothing landed or queued
    for entries in ([good, [good[0], -1]], [good, [good[0], 1]], [[good[0], True]], [],
                    [good, "x"], [[good[0], 1, 0]]):
        assert not m1.rx.take(BATCH, entries, [["out", "<f4", [4]]], [b"\1" * 16])
    assert m1.queued() == []


def test_commands_go_the_python_way(m1):
    body = Msg(CMD, CLIENT, m1.comm.task_id, cmd=STOP).header()
    assert m1.python_passes(body, None, []) is not None  # a fine command ...
    assert not m1.rx.take(MSG, body, None, [])  # ... that Python hands to the unit
    assert not m1.rx.take(3, body, None, [])  # not an actor message at all


FIELD = st.one_of(st.integers(-3, 12), st.sampled_from([2**31, 2**63 - 1, 2**63, -2**63]),
                  st.sampled_from([True, False, 1.0, "1", None]))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 9), FIELD), max_size=3),
       st.sampled_from([None, [["out", "<f4", [4]]], [["out", "float32", [4]]]]))
def test_random_headers_are_taken_only_when_the_python_check_passes_them(edits, metas):
    m1 = Machine1()
    body = _ready_body(m1.plan, m1.comm, m1.remote)
    for i, v in edits:
        body[i] = v
    frames = [np.arange(4, dtype="float32").tobytes()] if metas else []
    want = m1.python_passes(list(body), metas, frames)
    took = m1.rx.take(MSG, list(body), metas, frames)
    if took:
        assert want is not None and m1.queued() == [want]
        assert not metas or np.array_equal(m1.slots[want.slot]["out"], np.arange(4))
    else:
        assert m1.queued() == []
        # what it leaves is dropped by Python, or a kind it never takes (a command, a
        # dtype spelled otherwise than the receive slot's)
        assert want is None or want.type == CMD or metas[0][1] != "<f4"


def test_a_run_across_machines_goes_through_the_compiled_receiver(monkeypatch):
    """Through the public API: 3 machines over tcp, each stage on its own machine."""
    monkeypatch.setenv("ACTORFLOW_CORE", "native")
    from actorflow.actors.cluster import nodes

    b = af.PlanBuilder(machines=3, register_num=2, name="hops")
    x = b.source("random_normal", {"shape": [8], "dtype": "float32", "seed": 1},
                 piece_num=30, machine=0)
    h = b.op("identity", x, machine=1)
    h = b.op("identity", h, machine=2)
    b.output("y", h, machine=0)
    b.num_pieces = 30
    plan = b.build()
    with af.Session(plan, runtime=nodes(unit="thread", scheme="tcp")) as s:
        out = s.run_to_end(pieces=30)["y"]
        taken = {m: n.hosting.native_rx.taken for m, n in s.runtime.nodes.items()}
    want = [np.random.default_rng([1, p]).standard_normal(8).astype("float32")
            for p in range(30)]
    assert all(np.array_equal(o, w) for o, w in zip(out, want)) and len(out) == 30
    assert all(n > 0 for n in taken.values()), taken
