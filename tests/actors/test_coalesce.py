"""Process units send their actor messages to each peer unit as one BATCH per loop turn.

The mechanism over real ZeroMQ sockets (a real ``Router`` and listener), the unit loop's
promise never to hold a message while it blocks, and whole process-unit runs across two
machines whose READYs carry blobs, ACKs come back and EORDs end, with every number checked.
"""

from __future__ import annotations

import numpy as np
import pytest

import actorflow as af
from actorflow.actors import unit_wire as uw
from actorflow.actors.coalesce import land_batch
from actorflow.actors.landing import land
from actorflow.actors.routing import Router
from actorflow.actors.unit_loop import run_unit
from actorflow.errors import MalformedMessage
from actorflow.protocol.messages import ACK, EORD, READY, Msg
from actorflow.session import ClusterSession
from actorflow.transport.comm import listen
from actorflow.transport.outbox import Outbox


@pytest.fixture
def peer():
    """A listener standing for a peer unit, and a coalescing router whose task 7 lives
    there on another machine (so READYs carry their blobs) and task 8 on this one."""
    inbox = listen("tcp://127.0.0.1:0", name="peer")
    here = listen("tcp://127.0.0.1:0", name="here")
    outbox = Outbox("test")
    memory = {3: [{"a": np.full(4, float(s)), "b": np.arange(3) + s} for s in range(4)]}
    router = Router(0, {7: (1, 0), 8: (0, 2)}, outbox, memory,
                    {1: f"tcp://127.0.0.1:1 0={inbox.address}"}, {(0, 2): here.address},
                    coalesce=True)
    yield router, inbox, here
    outbox.close(0)
    inbox.close()
    here.close()


def test_a_batch_keeps_order_and_lands_blobs_of_mixed_messages(peer):
    router, inbox, here = peer
    sent = [Msg(READY, 1, 7, 3, 0, 0, seq=0), Msg(ACK, 1, 7, 5, 1, 0),
            Msg(READY, 1, 7, 3, 2, 1, seq=1), Msg(READY, 1, 8, 3, 3, 1),
            Msg(EORD, 1, 7, 3), Msg(ACK, 2, 8, 5, 0, 4)]
    for m in sent:
        router.send(m)
    assert router.pending
    assert inbox.recv(0.05) is None  # held until the flush
    router.flush()
    assert not router.pending
    got = inbox.recv(2.0)
    assert got is not None and got.kind == uw.BATCH
    assert inbox.recv(0.05) is None  # one transport message for five actor messages
    recv_memory = {3: [{"a": np.zeros(4), "b": np.zeros(3, np.int64)} for _ in range(4)]}
    msgs = land_batch(got, lambda m: land(m, recv_memory, lambda *a: None, "t"), "t",
                      _as_msg)
    assert [(m.type, m.dst, m.slot, m.piece_id) for m in msgs] == [
        (m.type, m.dst, m.slot, m.piece_id) for m in sent if m.dst == 7]
    for s in (0, 2):  # READYs crossed machines: their blobs landed in their slots
        np.testing.assert_array_equal(recv_memory[3][s]["a"], np.full(4, float(s)))
        np.testing.assert_array_equal(recv_memory[3][s]["b"], np.arange(3) + s)
    assert not recv_memory[3][1]["a"].any() and not recv_memory[3][3]["a"].any()
    # inside the machine only slot numbers travel: a header-only batch, in order
    local = here.recv(2.0)
    assert local is not None and local.kind == uw.BATCH and not local.metas
    landed = land_batch(local, None, "t", _as_msg)
    assert [(m.type, m.slot) for m in landed] == [(READY, 3), (ACK, 0)]


def test_a_batch_flushes_itself_at_its_bound(peer):
    router, inbox, _ = peer
    for i in range(300):
        router.send(Msg(ACK, 1, 7, 5, i % 4, i))
    router.flush()
    got = []
    while (m := inbox.recv(1.0)) is not None:
        got.append(m)
    assert [len(m.body) for m in got] == [128, 128, 44]
    ids = [Msg(*h).piece_id for m in got for h, _ in m.body]
    assert ids == list(range(300))


def test_a_malformed_batch_is_rejected_naming_where():
    from actorflow.transport.comm import Message

    bad = Message(uw.BATCH, [[[0, 1, 7], 2]], None, [])
    with pytest.raises(MalformedMessage, match="unit 9: a BATCH entry claims 2 blobs"):
        land_batch(bad, lambda m: None, "unit 9", _as_msg)


class _Unit:
    """The parts of a unit ``run_unit`` uses, dispatching through a real coalescing router."""

    def __init__(self, router: Router) -> None:
        self.live = 1
        self.router = router

    def push(self, msgs: list[Msg]) -> None:
        for msg in msgs:
            self.router.send(Msg(ACK, msg.dst, 7, 5, msg.slot, msg.piece_id))

    def stream_pending(self) -> bool:
        return False

    def drain_stream(self) -> None:
        pass

    def wait_timeout(self) -> float:
        return 0.2

    def holding(self) -> bool:
        return self.router.pending

    def flush(self) -> None:
        self.router.flush()

    def idle(self) -> None:
        pass

    def finish(self) -> None:
        self.router.flush()


class _Source:
    """Hands out ``msgs`` as if they already waited in the inbox, then blocks; at every
    blocking wait it records what the peer has received by then."""

    def __init__(self, msgs: list[Msg], inbox, unit: _Unit) -> None:
        self.msgs, self.inbox, self.unit = list(msgs), inbox, unit
        self.at_block: list[list] = []

    def take(self, timeout: float) -> list[Msg]:
        if self.msgs:
            msgs, self.msgs = self.msgs, []
            return msgs
        if timeout == 0:
            return []
        got = []
        while (m := self.inbox.recv(1.0)) is not None:
            got.append(m)
            if self.unit.router.pending or not got:
                continue
            break
        self.at_block.append(got)
        self.unit.live = 0
        return []

    def idle(self) -> bool:
        return True


def test_a_lone_message_goes_out_before_the_loop_blocks(peer):
    """Low load: one message in, its ACK is already at the peer as a plain MSG when the
    loop starts to wait (no timer holds it)."""
    router, inbox, _ = peer
    unit = _Unit(router)
    src = _Source([Msg(READY, 7, 4, 3, 1, 0)], inbox, unit)
    run_unit(unit, src)  # type: ignore[arg-type]
    (got,) = src.at_block
    assert [(m.kind, m.body[0], m.body[5]) for m in got] == [(uw.MSG, ACK, 0)]


def test_messages_that_already_wait_are_answered_in_one_batch(peer):
    router, inbox, _ = peer
    unit = _Unit(router)
    src = _Source([Msg(READY, 7, 4, 3, i % 4, i) for i in range(5)], inbox, unit)
    run_unit(unit, src)  # type: ignore[arg-type]
    (got,) = src.at_block
    assert [m.kind for m in got] == [uw.BATCH]
    assert [Msg(*h).piece_id for h, _ in got[0].body] == [0, 1, 2, 3, 4]


def test_process_units_across_two_machines_keep_every_piece_right():
    """Many pieces through process units on two machines and back three times: READYs with
    blobs, ACKs and EORDs travel in batches; every output is checked against numpy."""
    b = af.PlanBuilder(machines=2, register_num=3)
    x = b.input("x", (6,), "float64", machine=0)
    y = b.op("scalar_mul", x, scalar=2.0, machine=1)
    z = b.op("add", y, x, machine=0)
    w = b.op("scalar_mul", z, scalar=0.5, machine=1)
    v = b.op("add", w, y, machine=1)
    b.output("v", v, machine=0)
    feeds = [{"x": np.arange(6.0) * k - k} for k in range(150)]
    with ClusterSession(b.build(), unit="process", scheme="tcp", timeout=60) as s:
        outs = list(s.run_many(feeds, window=12))
    assert len(outs) == 150
    for f, o in zip(feeds, outs):
        np.testing.assert_allclose(o, 3.5 * f["x"])


def _as_msg(header: list) -> Msg:
    """A receiver's check that accepts every header (the inbound rules are tested apart)."""
    return Msg(*header)
